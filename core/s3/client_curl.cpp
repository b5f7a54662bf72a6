// The S3 client over libcurl (client.h): HEADs and ranged GETs
// (request.h) with retries and backoff, parts in parallel into a
// ".partial" file, checked, then renamed into the cache. Built only with
// libcurl (SEXPGPU_HAVE_CURL). Its messages and log lines come from the
// URL (which holds no secret: SigV4 signs in the Authorization header,
// never in the query) and the answers, never from a request's headers.
#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "s3/cache.h"
#include "s3/client.h"
#include "s3/error.h"
#include "s3/request.h"
#include "util/log.h"

namespace sexpgpu::s3 {

namespace fs = std::filesystem;

namespace {

bool is_md5_etag(const std::string& etag, const std::map<std::string, std::string>& headers) {
  std::string e = etag;
  e.erase(std::remove(e.begin(), e.end(), '"'), e.end());
  if (e.size() != 32 || !std::all_of(e.begin(), e.end(), [](char c) { return std::isxdigit(c); }))
    return false;
  // SSE-KMS and SSE-C objects have ETags that are not their MD5.
  auto sse = headers.find("x-amz-server-side-encryption");
  if (sse != headers.end() && sse->second != "AES256") return false;
  return headers.find("x-amz-server-side-encryption-customer-algorithm") == headers.end();
}

std::optional<std::string> file_md5(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_md5(), nullptr);
  std::vector<char> buf(1 << 20);
  ssize_t got = 0;
  while ((got = ::read(fd, buf.data(), buf.size())) > 0)
    EVP_DigestUpdate(ctx, buf.data(), size_t(got));
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  if (got < 0) return std::nullopt;
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

std::string unquoted(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '"'), s.end());
  return s;
}

class CurlClient final : public Client {
 public:
  CurlClient(ClientOptions options, Credentials credentials)
      : options_(std::move(options)), credentials_(std::move(credentials)) {
    signing_.credentials = &credentials_;
    signing_.sigv4 =
        "aws:amz:" + (options_.region.empty() ? std::string("us-east-1") : options_.region) + ":s3";
    signing_.timeout_s = options_.timeout_s;
  }
  CurlClient(const CurlClient&) = delete;  // signing_ points into this
  CurlClient& operator=(const CurlClient&) = delete;

  Result<ObjectInfo> head(const Url& url) override {
    ObjectInfo info;
    Answer answer;
    int attempts = 0;
    if (!head_answer(url, info, answer, attempts)) return failure(url, "HEAD", answer, attempts);
    return info;
  }

  Result<fs::path> fetch(const Url& url) override {
    if (options_.cache_root.empty())
      return object_failure(url,
                            "no cache directory to fetch it into (no SEXPGPU_CACHE and no HOME)",
                            "set SEXPGPU_CACHE to a directory");
    ObjectInfo info;
    Answer answer;
    int attempts = 0;
    if (!head_answer(url, info, answer, attempts)) {
      if (answer.status == 0) {
        if (std::optional<fs::path> cached = newest_entry(options_.cache_root, url)) {
          log::warn("s3: {}: no answer from {} ({}); using the cached copy {}", url.text(),
                    endpoint_name(), answer.transport, cached->string());
          return *cached;
        }
      }
      return failure(url, "HEAD", answer, attempts);
    }
    fs::path entry = cache_entry(options_.cache_root, url, info.etag);
    std::error_code ec;
    if (fs::is_regular_file(entry, ec) && fs::file_size(entry, ec) == info.size && !ec) {
      log::debug("s3: {}: cached at {} (ETag {})", url.text(), entry.string(), info.etag);
      return entry;
    }
    return download(url, info, entry);
  }

  CredentialSource credentials() const override { return credentials_.source; }
  const ClientOptions& options() const override { return options_; }

 private:
  std::string endpoint_name() const {
    return options_.endpoint.empty() ? "AWS S3" : options_.endpoint;
  }

  Failed failure(const Url& url, std::string_view doing, const Answer& answer, int attempts) const {
    return request_failure(url, doing, answer, attempts, options_.endpoint,
                           credentials_.source.kind + ": " + credentials_.source.detail);
  }

  // Waits before retry `attempt` (1-based): backoff_ms * 2^(attempt-1), at
  // most 10 s, less up to half at random so that parts do not retry in step.
  void back_off(int attempt) const {
    static thread_local std::minstd_rand random(
        unsigned(std::hash<std::thread::id>()(std::this_thread::get_id())));
    double ms = std::min(10000.0, options_.backoff_ms * double(1u << std::min(attempt - 1, 16)));
    ms *= 0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(random);
    std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(ms)));
  }

  // HEAD: true with `info` on a 200; false with `answer` otherwise (for a
  // 4xx, the XML code from a one-byte GET, since a HEAD answer has no body).
  bool head_answer(const Url& url, ObjectInfo& info, Answer& answer, int& attempts) const {
    Request req{"HEAD", object_url(options_.endpoint, options_.region, url), "", ""};
    Handle handle;
    Response r;
    for (attempts = 1;; ++attempts) {
      r = perform(handle, req, nullptr, signing_);
      if (!transient(r) || attempts > options_.retries) break;
      log::info("s3: HEAD {}: {}; retrying ({} of {})", url.text(), why(r), attempts,
                options_.retries);
      back_off(attempts);
    }
    log::debug("s3: HEAD {} -> {}", req.url, why(r));
    if (r.result == CURLE_OK && r.status == 200) {
      auto length = r.headers.find("content-length");
      if (length == r.headers.end()) {
        answer.status = r.status;
        answer.message = "the answer has no Content-Length";
        return false;
      }
      info.size = std::strtoull(length->second.c_str(), nullptr, 10);
      auto etag = r.headers.find("etag");
      info.etag = etag == r.headers.end() ? "" : etag->second;
      info.etag_is_md5 = is_md5_etag(info.etag, r.headers);
      return true;
    }
    answer.status = r.result == CURLE_OK ? r.status : 0;
    answer.transport = r.transport;
    if (auto region = r.headers.find("x-amz-bucket-region"); region != r.headers.end())
      answer.region = region->second;
    if (answer.status >= 400 && answer.status < 500) {
      Request probe{"GET", req.url, "0-0", ""};
      Response body = perform(handle, probe, nullptr, signing_);
      if (body.status >= 300) parse_error_body(body.error_body, answer);
    }
    return false;
  }

  // Bytes [first, first + length) of the object into `fd` at `first`,
  // retried; nullopt when they all arrived.
  std::optional<Failed> download_part(Handle& handle, const Url& url, const std::string& http_url,
                                      const ObjectInfo& info, int fd, uint64_t first,
                                      uint64_t length) const {
    Request req{"GET", http_url, std::to_string(first) + "-" + std::to_string(first + length - 1),
                info.etag};
    std::string doing = "GET bytes " + req.range;
    for (int attempt = 1;; ++attempt) {
      uint64_t got = 0;
      bool write_failed = false;
      Sink sink = [&](const char* data, size_t n) {
        if (got + n > length) return false;  // more than asked: the Range was ignored
        if (::pwrite(fd, data, n, off_t(first + got)) != ssize_t(n))
          return write_failed = true, false;
        got += n;
        return true;
      };
      Response r = perform(handle, req, &sink, signing_);
      log::trace("s3: GET {} bytes {} -> {}, {} bytes", url.text(), req.range, why(r), got);
      if (write_failed)
        return object_failure(url,
                              "cannot write the cache file: " + std::string(std::strerror(errno)),
                              "free disk space, or set SEXPGPU_CACHE to another directory");
      bool whole = first == 0 && length == info.size;
      bool status_ok = r.status == 206 || (r.status == 200 && whole);
      if (r.result == CURLE_OK && status_ok && got == length) return std::nullopt;
      if (r.sink_refused || (r.result == CURLE_OK && status_ok && got > length))
        return object_failure(
            url, doing + ": the server sent more bytes than asked (it ignored the Range)",
            "use an S3-compatible server that serves ranged GETs");
      if (r.status == 412)
        return object_failure(
            url,
            "the object changed while it was downloaded (its ETag is no longer " + info.etag + ")",
            "run again: the new version is fetched");
      bool short_body = r.result == CURLE_OK && status_ok && got < length;
      if ((transient(r) || short_body) && attempt <= options_.retries) {
        log::info("s3: {} {}: {}; retrying ({} of {})", url.text(), doing,
                  short_body ? "a short body: " + std::to_string(got) + " of " +
                                   std::to_string(length) + " bytes"
                             : why(r),
                  attempt, options_.retries);
        back_off(attempt);
        continue;
      }
      if (short_body)
        return object_failure(url,
                              doing + ": the body ended after " + std::to_string(got) + " of " +
                                  std::to_string(length) + " bytes (" + std::to_string(attempt) +
                                  " attempts)",
                              "the connection keeps being cut: try again later");
      Answer a;
      a.status = r.result == CURLE_OK ? r.status : 0;
      a.transport = r.transport;
      parse_error_body(r.error_body, a);
      return failure(url, doing, a, attempt);
    }
  }

  Result<fs::path> download(const Url& url, const ObjectInfo& info, const fs::path& entry) const {
    static std::atomic<uint64_t> counter{0};
    std::error_code ec;
    fs::create_directories(entry.parent_path(), ec);
    if (ec)
      return object_failure(
          url,
          "cannot create the cache directory " + entry.parent_path().string() + ": " + ec.message(),
          "set SEXPGPU_CACHE to a writable directory");
    fs::path partial =
        entry.parent_path() / (".partial-" + std::to_string(::getpid()) + "-" +
                               std::to_string(counter++) + "-" + entry.filename().string());
    const std::string http_url = object_url(options_.endpoint, options_.region, url);
    const uint64_t parts =
        info.size == 0 ? 0 : (info.size + options_.part_bytes - 1) / options_.part_bytes;
    auto started = std::chrono::steady_clock::now();
    log::info("s3: downloading {} ({} bytes, {} part{}) into {}", url.text(), info.size, parts,
              parts == 1 ? "" : "s", options_.cache_root.string());
    // A whole download is repeated when its MD5 disagrees with the ETag
    // (bytes damaged on the way), as often as a request is retried.
    for (int round = 1;; ++round) {
      int fd = ::open(partial.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0 || ::ftruncate(fd, off_t(info.size)) != 0) {
        std::string e = std::strerror(errno);
        if (fd >= 0) ::close(fd);
        fs::remove(partial, ec);
        return object_failure(url, "cannot write " + partial.string() + ": " + e,
                              "free disk space, or set SEXPGPU_CACHE to another directory");
      }
      std::atomic<uint64_t> next{0};
      std::atomic<bool> stop{false};
      std::mutex mutex;
      std::optional<Failed> first_error;
      auto worker = [&] {
        Handle handle;  // this worker's connection, for each of its parts
        for (uint64_t i; !stop && (i = next++) < parts;) {
          uint64_t first = i * options_.part_bytes;
          uint64_t length = std::min(options_.part_bytes, info.size - first);
          if (std::optional<Failed> e =
                  download_part(handle, url, http_url, info, fd, first, length)) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!first_error) first_error = std::move(e);
            stop = true;
          }
        }
      };
      std::vector<std::thread> threads;
      for (uint64_t t = 1; t < std::min<uint64_t>(parts, uint64_t(options_.parallel)); ++t)
        threads.emplace_back(worker);
      worker();
      for (std::thread& t : threads) t.join();
      bool synced = ::fsync(fd) == 0;
      ::close(fd);
      if (first_error) {
        fs::remove(partial, ec);
        return *first_error;
      }
      if (!synced) {
        fs::remove(partial, ec);
        return object_failure(url, "cannot write " + partial.string() + ": fsync failed",
                              "free disk space, or set SEXPGPU_CACHE to another directory");
      }
      if (info.etag_is_md5) {
        std::optional<std::string> md5 = file_md5(partial);
        if (!md5 || *md5 != unquoted(info.etag)) {
          std::string got = md5 ? *md5 : "unreadable";
          if (round <= options_.retries) {
            log::warn("s3: {}: the downloaded bytes' MD5 is {}, the ETag {}; downloading again",
                      url.text(), got, info.etag);
            back_off(round);
            continue;
          }
          fs::remove(partial, ec);
          return object_failure(
              url,
              "the downloaded bytes' MD5 is " + got + " and the ETag is " + info.etag + " (" +
                  std::to_string(round) + " downloads): the bytes or the ETag are wrong",
              "something between here and the server changes the bytes (a proxy?): nothing was "
              "cached; try again, or from another network");
        }
      }
      fs::rename(partial, entry, ec);
      if (ec) {
        fs::remove(partial, ec);
        return object_failure(url, "cannot move the download to " + entry.string(),
                              "set SEXPGPU_CACHE to a writable directory");
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      log::info("s3: {}: {} bytes in {:.2f} s", url.text(), info.size, s);
      return entry;
    }
  }

  ClientOptions options_;
  Credentials credentials_;
  Signing signing_;
};

}  // namespace

std::unique_ptr<Client> make_curl_client(const ClientOptions& options, Credentials credentials) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::make_unique<CurlClient>(options, std::move(credentials));
}

}  // namespace sexpgpu::s3
