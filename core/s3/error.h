// E-S3 (docs/errors.md): a failed S3 request as a diagnostic naming the
// bucket, the key, the HTTP status and S3's error code (from the XML error
// body), with a fix line for the usual causes: wrong credentials, a
// missing bucket, no such key, another region, no network. Never the
// credentials: the request's headers are not part of any message.
#pragma once

#include <string>
#include <string_view>

#include "s3/url.h"
#include "util/result.h"

namespace sexpgpu::s3 {

// What S3 answered: the HTTP status (0: no answer, `transport` says why,
// as libcurl put it), the XML error body's Code, Message and Region.
struct Answer {
  long status = 0;
  std::string transport;  // libcurl's message when there was no HTTP answer
  std::string code, message, region;
};

// Code, Message and Region of an S3 XML error body (empty when absent).
void parse_error_body(std::string_view xml, Answer& answer);

// The diagnostic of a request that failed: "s3://b/k: HEAD: HTTP 404
// NoSuchKey: The specified key does not exist." with its fix. `doing` is
// what was asked ("HEAD", "GET bytes 0-1048575"), `attempts` how many
// times it was tried. `endpoint` is named in the fixes about the network
// and missing buckets.
Failed request_failure(const Url& url, std::string_view doing, const Answer& answer, int attempts,
                       const std::string& endpoint, const std::string& credential_detail);

// Another E-S3 about an object (the download did not check out): message
// and fix as given, after "s3://b/k: ".
Failed object_failure(const Url& url, const std::string& message, const std::string& fix);

}  // namespace sexpgpu::s3
