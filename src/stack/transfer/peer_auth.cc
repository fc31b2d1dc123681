#include "transfer/peer_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <string>

namespace recur::transfer {

Result<AuthBytes> random_auth_nonce() {
  AuthBytes nonce;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), int(nonce.size())) != 1)
    return internal_error("peer authentication: the random source failed (RAND_bytes)");
  return nonce;
}

AuthBytes peer_auth_proof(std::string_view key, AuthSide side, const AuthBytes& nonce, std::string_view segment_name) {
  std::string message = side == AuthSide::kClient ? "recur-kv client proof\n" : "recur-kv server proof\n";
  message.append(reinterpret_cast<const char*>(nonce.data()), nonce.size());
  message.append(segment_name);
  AuthBytes proof{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), reinterpret_cast<unsigned char*>(proof.data()), &length);
  return proof;
}

bool same_auth_bytes(const AuthBytes& a, const AuthBytes& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace recur::transfer
