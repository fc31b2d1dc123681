// Frames (frame.h) onto a socket: a header and its payload in one go (MSG_MORE), the header's
// length and checksum those of the payload. Used by both sides of the TCP transport.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"
#include "transfer/frame.h"

namespace recur::transfer {

Status send_frame(int fd, FrameOp op, uint64_t request_id, uint16_t status, std::span<const std::byte> payload,
                  std::string_view what);
// A kReply with status = the error's code + 1 and its message as the payload.
Status send_error_reply(int fd, uint64_t request_id, const Error& error, std::string_view what);

}  // namespace recur::transfer
