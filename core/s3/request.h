// One HTTP exchange with S3 through libcurl, for the client
// (client_curl.cpp): the request, its answer, the body's sink, a handle
// that keeps its connection between requests, and what counts as worth a
// retry. Signed by libcurl's CURLOPT_AWS_SIGV4 when there are credentials.
// Built only with libcurl (SEXPGPU_HAVE_CURL).
//
// Secrets: the keys go to libcurl as CURLOPT_USERNAME/PASSWORD and the
// session token as a header; CURLOPT_VERBOSE is never set (its output
// holds the signed headers), and nothing here logs or returns a request's
// headers: the caller's messages come from the URL and the answer alone.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "s3/credentials.h"

namespace sexpgpu::s3 {

struct Request {
  const char* method = "GET";  // "GET" or "HEAD"
  std::string url;
  std::string range;     // "FIRST-LAST", or "" for the whole object
  std::string if_match;  // the ETag as S3 gave it, or ""
};

struct Response {
  CURLcode result = CURLE_OK;
  long status = 0;
  std::string transport;                       // libcurl's message when result != OK
  std::map<std::string, std::string> headers;  // lower-case names, of the last response
  std::string error_body;                      // the body of a status >= 300, bounded
  uint64_t body_bytes = 0;                     // bytes the sink took
  bool sink_refused = false;
};

// Takes the body of a successful answer; false stops the transfer.
using Sink = std::function<bool(const char* data, size_t n)>;

// A libcurl handle for one thread's requests in turn: curl_easy_reset
// between them keeps its open connection, so an object's parts share a TCP
// (and TLS) session instead of opening one each.
struct Handle {
  CURL* curl = curl_easy_init();
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (curl) curl_easy_cleanup(curl);
  }
};

// How requests are signed and timed.
struct Signing {
  const Credentials* credentials = nullptr;  // anonymous(): unsigned
  std::string sigv4;                         // "aws:amz:REGION:s3"
  int timeout_s = 30;  // to connect, and with no byte moving, before giving up
};

// One exchange on `handle`, no retry: the body of a 2xx goes to `sink`
// (null: kept as error_body), any other status's to error_body.
Response perform(Handle& handle, const Request& req, const Sink* sink, const Signing& signing);

// Whether a failed exchange is worth another try: no answer, a reset, a
// cut body, a stall, or HTTP 408, 429 or 5xx.
bool transient(const Response& r);

// libcurl's message, or "HTTP STATUS".
std::string why(const Response& r);

}  // namespace sexpgpu::s3
