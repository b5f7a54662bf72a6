// s3://bucket/key addresses (spec/run-file.md, loaders): parsing one, and
// the HTTP URL of the object at an endpoint. AWS's own endpoint is
// addressed virtual-hosted (https://BUCKET.s3.REGION.amazonaws.com/KEY);
// any endpoint the user names (AWS_ENDPOINT_URL, [s3] endpoint: MinIO,
// moto, 127.0.0.1:PORT) path-style (ENDPOINT/BUCKET/KEY), which every
// S3-compatible store serves.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace sexpgpu::s3 {

struct Url {
  std::string bucket, key;
  // "s3://bucket/key", for messages.
  std::string text() const { return "s3://" + bucket + "/" + key; }
};

// E-S3 on a malformed address: no "s3://", a bucket name S3 would refuse
// (3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit), an
// empty key or one longer than 1024 bytes.
Result<Url> parse_url(std::string_view text);

// `text` with every byte `keep` refuses written %XX (upper-case hex).
std::string percent_encode(std::string_view text, bool (*keep)(unsigned char c));

// The key percent-encoded as S3 wants it in a path (RFC 3986 unreserved
// bytes kept, '/' kept, every other byte %XX).
std::string encode_key(std::string_view key);

// The object's HTTP URL. `endpoint` "" means AWS's own endpoint for
// `region`; a scheme-less endpoint ("127.0.0.1:9000") is taken as http.
std::string object_url(const std::string& endpoint, const std::string& region, const Url& url);

}  // namespace sexpgpu::s3
