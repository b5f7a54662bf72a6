// The one cache root (docs/environment.md): $SEXPGPU_CACHE, else
// $SEXPGPU_CACHE_DIR (the older name, kept as an alias), else
// $XDG_CACHE_HOME/sexpgpu, else ~/.cache/sexpgpu; `s3/` holds S3 objects,
// `cuda/` the CUDA device's compiled kernels.
//
// An object's entry is keyed by bucket, key and ETag:
//   ROOT/s3/BUCKET/K1/K2/.../@ETAG/NAME
// where K1/K2/.../NAME are the key's '/'-separated parts, each
// percent-encoded so that no part is "", "." or ".." or holds a byte a
// file name should not ('@' is encoded too, so "@ETAG" is never a key's
// part). The entry's file keeps the key's last part as its name, which is
// what messages and `explain` show. An entry only ever appears whole: a
// download goes to a ".partial-*" file beside it and is renamed into place
// once its size (and MD5, where the ETag is one) is checked.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "s3/credentials.h"
#include "s3/url.h"

namespace sexpgpu::s3 {

// The cache root, as the file comment says; "" when none can be named (no
// variable and no HOME).
std::filesystem::path cache_root(const Env& env);

// One part of a key as a file name (the encoding above).
std::string encode_part(std::string_view part);

// The ETag as a directory name: quotes dropped, bytes other than
// [A-Za-z0-9-] as '_' (an MD5 ETag stays its 32 hex digits); "none" for
// an object without one.
std::string etag_dir(std::string_view etag);

// The entry for (bucket, key, etag) under `root`.
std::filesystem::path cache_entry(const std::filesystem::path& root, const Url& url,
                                  std::string_view etag);

// The newest complete entry of (bucket, key), whatever its ETag: what an
// offline run uses. nullopt when there is none.
std::optional<std::filesystem::path> newest_entry(const std::filesystem::path& root,
                                                  const Url& url);

}  // namespace sexpgpu::s3
