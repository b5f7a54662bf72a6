// The S3 client (docs/data.md, "S3"): HEAD an object, fetch it into the
// cache, and say where its credentials came from. Requests go through
// libcurl, signed with its CURLOPT_AWS_SIGV4 (SigV4 is not written here).
// A build without libcurl still has this interface: every call fails with
// E-S3 saying so.
//
// fetch(): a HEAD gives the object's size and ETag; an entry of the cache
// for that (bucket, key, ETag) of that size is the answer with no object
// byte downloaded. Otherwise the object is downloaded in ranged parts (in
// parallel, each GET with If-Match on the ETag, so an object replaced
// meanwhile fails instead of mixing two versions) into a ".partial" file,
// its size checked (and its MD5 where the ETag is a single-part upload's
// MD5), and only then renamed into place. A request that fails with a 5xx,
// a reset, a cut body or a stall is retried with exponential backoff; a
// HEAD that gets no answer at all (no network) falls back to the newest
// cached copy with a warning.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "s3/credentials.h"
#include "s3/url.h"
#include "util/result.h"

namespace sexpgpu::s3 {

struct ObjectInfo {
  uint64_t size = 0;
  std::string etag;
  // Whether the ETag is the MD5 of the bytes (a single-part upload that no
  // KMS or customer key encrypted).
  bool etag_is_md5 = false;
};

// What a client is made from. The defaults are what from_environment uses
// when nothing is set; options_from_environment says which variables.
struct ClientOptions {
  std::string endpoint;  // "" = AWS's own, for `region`
  std::string region;    // "" = us-east-1
  Profile profile;
  std::filesystem::path cache_root;  // "" = no cache (fetch fails saying so)
  int retries = 4;                   // SEXPGPU_S3_RETRIES, 0 to 20
  int timeout_s = 30;  // SEXPGPU_S3_TIMEOUT: connect, and no byte for this long, 1 to 3600
  uint64_t part_bytes = 16ull << 20;  // SEXPGPU_S3_PART_MB, 1 to 5120 MiB
  int parallel = 4;                   // SEXPGPU_S3_PARALLEL, 1 to 64 parts at once
  int backoff_ms = 200;               // the first retry's wait; doubled each time, at most 10 s
};

// The options from the environment: AWS_ENDPOINT_URL (also
// AWS_ENDPOINT_URL_S3), AWS_REGION (also AWS_DEFAULT_REGION), AWS_PROFILE,
// the cache root (cache.h) and the SEXPGPU_S3_* tuning variables, each
// range-checked: a value out of its range is E-S3 naming the variable.
Result<ClientOptions> options_from_environment(const Env& env);

class Client {  // one per process is fine; thread-safe
 public:
  virtual ~Client() = default;
  // options_from_environment(process_env()) and the credentials.
  static Result<std::unique_ptr<Client>> from_environment();
  // A client for these options, its credentials resolved from `env`.
  static Result<std::unique_ptr<Client>> create(const ClientOptions& options, const Env& env);

  virtual Result<ObjectInfo> head(const Url&) = 0;
  // The object in the cache (SEXPGPU_CACHE/s3/...), downloaded if the
  // cached copy is missing or its ETag changed; the local path.
  virtual Result<std::filesystem::path> fetch(const Url&) = 0;
  virtual CredentialSource credentials() const = 0;
  virtual const ClientOptions& options() const = 0;
};

// Whether this build has libcurl (false: every call fails, saying so).
bool built_with_curl();

}  // namespace sexpgpu::s3
