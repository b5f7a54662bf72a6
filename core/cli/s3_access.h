// The process's S3 client (core/s3), made at the first s3:// address a run
// file names, from the settings (docs/environment.md: AWS_ENDPOINT_URL,
// AWS_REGION, AWS_PROFILE over the config file's [s3] endpoint, region and
// profile) and the environment's credentials; and the record of every
// address fetched, which doctor reports. The CLI is the composition root:
// install_s3_data() hands the data library (core/data/lookup.h) a fetcher
// that goes through this client.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "s3/client.h"
#include "util/result.h"

namespace sexpgpu::cli {

// The client, or why there is none (E-S3: credentials that cannot be
// read, a tuning variable out of range); made once, the same answer after.
Result<s3::Client*> s3_client();

// One s3:// address a run file named, in the order fetched.
struct S3Access {
  std::string address;
  Result<std::filesystem::path> local;  // the cached copy, or the E-S3 failure
};
std::vector<S3Access> s3_accesses();

// Installs the data library's remote fetcher (call once, before a verb).
void install_s3_data();

}  // namespace sexpgpu::cli
