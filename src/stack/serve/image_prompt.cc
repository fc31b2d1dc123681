#include "serve/image_prompt.h"

#include <algorithm>

#include "serve/chat_template.h"
#include "serve/image_decode.h"
#include "serve/image_encoder.h"

namespace recur::serve {
namespace {

// Marks where an image sits in the rendered template; text next to images may not hold it.
constexpr char kImageMark = '\x1e';

}  // namespace

bool chat_has_images(std::span<const ChatMessage> messages) {
  return std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return !m.images.empty(); });
}

expected<void, ApiError> splice_chat_images(std::span<const ChatMessage> messages, const Model& model,
                                            PreparedRequest& p) {
  std::vector<ChatMessage> marked(messages.begin(), messages.end());
  std::vector<const ChatImage*> images;
  for (ChatMessage& m : marked) {
    if (m.images.empty()) continue;
    if (m.content.find(kImageMark) != std::string::npos)
      return unexpected(bad_request(m.images[0].param, "invalid_value",
                                    "'{}': a message with images may not hold the character U+001E in its text",
                                    m.images[0].param));
    for (auto it = m.images.rbegin(); it != m.images.rend(); ++it) m.content.insert(it->offset, 1, kImageMark);
    for (const ChatImage& image : m.images) images.push_back(&image);
  }
  const std::shared_ptr<const ImageEncoder> encoder = installed_image_encoder();
  if (!encoder)
    return unexpected(bad_request(images[0]->param, "unsupported",
                                  "'{}': this server encodes no images (images work with --role all, which encodes in "
                                  "process or through --encode URL; the disaggregated roles do not take them yet)",
                                  images[0]->param));
  const int dim = model.config().dim;
  std::vector<ImageEmbedding> encoded;
  for (const ChatImage* image : images) {
    auto pixels = decode_image_data_uri(image->url, image->param);
    if (!pixels) return unexpected(bad_request(image->param, "invalid_image", "{}", pixels.error().message()));
    auto e = encoder->encode(*pixels);
    if (!e)
      return unexpected(ApiError{502, fmt::format("'{}': the image encoder failed: {}", image->param, e.error().to_string()),
                                 "server_error", image->param, "encode_failed"});
    if (e->dim != dim || e->data.size() != size_t(e->rows) * size_t(e->dim))
      return unexpected(ApiError{500, fmt::format("the image encoder ({}) gives rows of {} floats; the model's hidden size "
                                                  "is {}",
                                                  encoder->describe(), e->dim, dim),
                                 "server_error", "", "encoder_mismatch"});
    encoded.push_back(std::move(*e));
  }
  const Tokenizer& tok = model.tokenizer();
  const TokenId placeholder = std::max<TokenId>(tok.vocabulary().unknown, 0);
  const std::string rendered = render_chat_prompt(marked);
  p.embedding_dim = dim;
  size_t start = 0;
  for (size_t i = 0; i <= encoded.size(); ++i) {
    const size_t end = i < encoded.size() ? rendered.find(kImageMark, start) : rendered.size();
    for (TokenId id : tok.encode(std::string_view(rendered).substr(start, end - start), i == 0 && tok.vocabulary().add_bos)) {
      p.prompt_ids.push_back(id);
      p.embedding_row.push_back(-1);
    }
    if (i == encoded.size()) break;
    const int32_t first_row = int32_t(p.embeddings.size() / size_t(dim));
    for (int r = 0; r < encoded[i].rows; ++r) {
      p.prompt_ids.push_back(placeholder);
      p.embedding_row.push_back(first_row + r);
    }
    p.embeddings.insert(p.embeddings.end(), encoded[i].data.begin(), encoded[i].data.end());
    start = end + 1;
  }
  return {};
}

}  // namespace recur::serve
