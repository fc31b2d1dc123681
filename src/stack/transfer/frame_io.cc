#include "transfer/frame_io.h"

#include "transfer/checksum.h"
#include "transfer/socket_io.h"

namespace recur::transfer {

Status send_frame(int fd, FrameOp op, uint64_t request_id, uint16_t status, std::span<const std::byte> payload,
                  std::string_view what) {
  FrameHeader h;
  h.op = op;
  h.request_id = request_id;
  h.status = status;
  h.length = payload.size();
  h.checksum = checksum64(payload);
  FrameHeaderBytes bytes = encode_frame_header(h);
  RECUR_RETURN_IF_ERROR(send_all(fd, bytes.data(), bytes.size(), what, !payload.empty()));
  if (!payload.empty()) RECUR_RETURN_IF_ERROR(send_all(fd, payload.data(), payload.size(), what));
  return ok_status();
}

Status send_error_reply(int fd, uint64_t request_id, const Error& error, std::string_view what) {
  const std::string& m = error.message();
  return send_frame(fd, FrameOp::kReply, request_id, reply_status(error.code()), std::as_bytes(std::span(m.data(), m.size())),
                    what);
}

}  // namespace recur::transfer
