// A chat prompt with images: each image part (request.h ChatImage) is decoded (image_decode.h),
// encoded by the process's encoder (image_encoder.h) and its rows take as many prompt positions
// where the part sits in the rendered chat template. The positions hold a placeholder token id
// (the vocabulary's unknown token, else 0) and an embedding row (PreparedRequest::embedding_row),
// which the batch forward uses instead of the token's embedding (model.h BatchToken::embedding).
// So usage's prompt_tokens counts the image positions. The text between images is tokenized
// piece by piece (BOS only before the first).
#pragma once

#include <span>

#include "core/expected.h"
#include "engine/model.h"
#include "serve/api_error.h"
#include "serve/prompt.h"
#include "serve/request.h"

namespace recur::serve {

bool chat_has_images(std::span<const ChatMessage> messages);

// Fills p.prompt_ids, p.embeddings, p.embedding_row and p.embedding_dim. Errors: no encoder
// in this process (400 unsupported), an image that does not decode (400 invalid_image, param the
// part), text holding U+001E next to images (400), the encoder failing (502 encode_failed) or
// giving rows of another size than the model's hidden size (500).
expected<void, ApiError> splice_chat_images(std::span<const ChatMessage> messages, const Model& model,
                                            PreparedRequest& p);

}  // namespace recur::serve
