// The TCP transport's peer authentication (frame.h, "Peer authentication"; docs/transfer.md):
// both sides hold the same peer key (the serving roles' RECUR_PEER_KEY / --peer-key-file) and
// prove it with HMAC-SHA256 over the other side's random nonce and the segment name, so the key
// never crosses the wire and a recorded answer is worthless for another connection. The client
// and server proofs carry different labels, so one side's proof cannot be reflected back as the
// other's. Proofs are compared in constant time.
#pragma once

#include <string_view>

#include "core/status.h"
#include "transfer/frame.h"

namespace recur::transfer {

enum class AuthSide { kClient, kServer };

// 32 bytes from the OS's random source (OpenSSL's RAND_bytes).
Result<AuthBytes> random_auth_nonce();
// HMAC-SHA256(key, label of `side` || nonce || segment name).
AuthBytes peer_auth_proof(std::string_view key, AuthSide side, const AuthBytes& nonce, std::string_view segment_name);
// Constant time (CRYPTO_memcmp).
bool same_auth_bytes(const AuthBytes& a, const AuthBytes& b);

}  // namespace recur::transfer
