// One HTTP exchange with S3 through libcurl (request.h).
#include "s3/request.h"

#include <algorithm>
#include <chrono>
#include <string_view>

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::s3 {

namespace {

// SHA-256 of an empty payload: what a GET or HEAD signs as its body.
constexpr const char* kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr size_t kMaxErrorBody = 64 << 10;

struct Transfer {
  CURL* curl;
  Response* response;
  const Sink* sink;
  int timeout_s;
  // The stall watch: the bytes seen and when they last grew.
  curl_off_t seen = -1;
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
  bool stalled = false;
};

// libcurl's own low-speed limit averages over a window of seconds, so a
// transfer that stops dead after a burst goes on for that long; this
// counts from the last byte instead. Called about once a second and on
// every read; non-zero aborts the transfer.
int on_progress(void* user, curl_off_t, curl_off_t now_down, curl_off_t, curl_off_t now_up) {
  auto* t = static_cast<Transfer*>(user);
  auto now = std::chrono::steady_clock::now();
  if (now_down + now_up != t->seen) {
    t->seen = now_down + now_up;
    t->since = now;
    return 0;
  }
  if (now - t->since < std::chrono::seconds(t->timeout_s)) return 0;
  t->stalled = true;
  return 1;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {
    t->response->headers.clear();  // a new response (after a 100 Continue)
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->response->headers[lower(std::string(line.substr(0, colon)))] = std::string(value);
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 300 || !t->sink) {
    std::string& body = t->response->error_body;
    body.append(data, std::min(bytes, kMaxErrorBody - std::min(kMaxErrorBody, body.size())));
    return bytes;
  }
  if (!(*t->sink)(data, bytes)) {
    t->response->sink_refused = true;
    return 0;  // CURLE_WRITE_ERROR
  }
  t->response->body_bytes += bytes;
  return bytes;
}

}  // namespace

bool transient(const Response& r) {
  switch (r.result) {
    case CURLE_OK: return r.status == 408 || r.status == 429 || r.status >= 500;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_ABORTED_BY_CALLBACK:  // only on_progress aborts: a stall
      return true;
    default: return false;
  }
}

std::string why(const Response& r) {
  return r.result != CURLE_OK ? r.transport : "HTTP " + std::to_string(r.status);
}

Response perform(Handle& handle, const Request& req, const Sink* sink, const Signing& signing) {
  Response response;
  CURL* curl = handle.curl;
  if (curl) curl_easy_reset(curl);
  if (!curl) {
    response.result = CURLE_FAILED_INIT;
    response.transport = "libcurl could not start a request";
    return response;
  }
  char error[CURL_ERROR_SIZE] = {};
  Transfer t{curl, &response, sink, signing.timeout_s};
  curl_slist* headers = nullptr;
  headers = curl_slist_append(
      headers, (std::string("x-amz-content-sha256: ") + kEmptyPayloadSha256).c_str());
  if (!signing.credentials->session_token.empty())
    headers = curl_slist_append(
        headers, ("x-amz-security-token: " + signing.credentials->session_token).c_str());
  if (!req.if_match.empty())
    headers = curl_slist_append(headers, ("If-Match: " + req.if_match).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "sexpgpu/" SEXPGPU_VERSION);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, long(signing.timeout_s));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  if (std::string_view(req.method) == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  if (!req.range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, req.range.c_str());
  if (!signing.credentials->anonymous()) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, signing.sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, signing.credentials->access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, signing.credentials->secret_key.c_str());
  }
  response.result = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  if (t.stalled)
    response.transport = "no byte for " + std::to_string(signing.timeout_s) + " s (a stall)";
  else if (response.result != CURLE_OK)
    response.transport = *error ? std::string(error) : curl_easy_strerror(response.result);
  curl_slist_free_all(headers);
  return response;
}

}  // namespace sexpgpu::s3
