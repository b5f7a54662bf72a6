// s3:// addresses and object URLs (url.h).
#include "s3/url.h"

#include <cctype>

namespace sexpgpu::s3 {

namespace {

bool bucket_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
}
bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

Failed malformed(std::string_view text, const std::string& why) {
  Failed f = fail("E-S3", "\"" + std::string(text) + "\" is not an S3 address: " + why);
  f.diagnostic.fix =
      "write s3://BUCKET/KEY, e.g. s3://my-data/fashion-mnist/train-images-idx3-ubyte.gz";
  return f;
}

}  // namespace

Result<Url> parse_url(std::string_view text) {
  constexpr std::string_view scheme = "s3://";
  if (!text.starts_with(scheme)) return malformed(text, "it does not start with s3://");
  std::string_view rest = text.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string_view bucket = rest.substr(0, slash);
  if (bucket.empty()) return malformed(text, "no bucket");
  if (bucket.size() < 3 || bucket.size() > 63)
    return malformed(text, "a bucket name has 3 to 63 characters, \"" + std::string(bucket) +
                               "\" has " + std::to_string(bucket.size()));
  for (char c : bucket)
    if (!bucket_char(c))
      return malformed(
          text, "a bucket name takes a-z, 0-9, '.' and '-', not '" + std::string(1, c) + "'");
  if (!alnum(bucket.front()) || !alnum(bucket.back()))
    return malformed(text, "a bucket name starts and ends with a letter or digit");
  if (slash == std::string_view::npos || slash + 1 == rest.size())
    return malformed(text, "no key after the bucket");
  std::string_view key = rest.substr(slash + 1);
  if (key.size() > 1024)
    return malformed(text, "a key has at most 1024 bytes, this one " + std::to_string(key.size()));
  return Url{std::string(bucket), std::string(key)};
}

std::string percent_encode(std::string_view text, bool (*keep)(unsigned char c)) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (keep(c)) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string encode_key(std::string_view key) {
  return percent_encode(key, [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
  });
}

std::string object_url(const std::string& endpoint, const std::string& region, const Url& url) {
  if (endpoint.empty()) {
    // A bucket name with dots breaks the TLS certificate's wildcard:
    // those go path-style, as the AWS SDKs do.
    std::string host =
        "s3." + (region.empty() ? std::string("us-east-1") : region) + ".amazonaws.com";
    if (url.bucket.find('.') != std::string::npos)
      return "https://" + host + "/" + url.bucket + "/" + encode_key(url.key);
    return "https://" + url.bucket + "." + host + "/" + encode_key(url.key);
  }
  std::string base = endpoint.find("://") == std::string::npos ? "http://" + endpoint : endpoint;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + url.bucket + "/" + encode_key(url.key);
}

}  // namespace sexpgpu::s3
