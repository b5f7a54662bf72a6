// E-S3 diagnostics (error.h).
#include "s3/error.h"

namespace sexpgpu::s3 {

namespace {

std::string element(std::string_view xml, std::string_view name) {
  std::string open = "<" + std::string(name) + ">", close = "</" + std::string(name) + ">";
  size_t a = xml.find(open);
  if (a == std::string_view::npos) return {};
  a += open.size();
  size_t b = xml.find(close, a);
  if (b == std::string_view::npos) return {};
  std::string text(xml.substr(a, b - a));
  return text.size() > 300 ? text.substr(0, 300) + "..." : text;
}

std::string fix_for(const Url& url, const Answer& a, const std::string& endpoint,
                    const std::string& credentials) {
  const std::string where = endpoint.empty() ? std::string("AWS") : endpoint;
  if (a.status == 0)
    return "no answer from " + where +
           ": check the network, and AWS_ENDPOINT_URL or [s3] endpoint (a cached copy is used "
           "when there is one)";
  if (a.code == "NoSuchKey" || (a.status == 404 && a.code.empty()))
    return "no object " + url.key + " in bucket " + url.bucket +
           ": check the key (aws s3 ls s3://" + url.bucket + "/ lists the bucket)";
  if (a.code == "NoSuchBucket")
    return "no bucket " + url.bucket + " at " + where +
           ": check its name, AWS_ENDPOINT_URL and AWS_REGION";
  if (a.code == "PermanentRedirect" || a.code == "AuthorizationHeaderMalformed" || a.status == 301)
    return "the bucket is in another region" +
           (a.region.empty() ? std::string() : " (" + a.region + ")") +
           ": set AWS_REGION or [s3] region";
  if (a.status == 401 || a.status == 403 || a.code == "InvalidAccessKeyId" ||
      a.code == "SignatureDoesNotMatch" || a.code == "ExpiredToken" || a.code == "AccessDenied")
    return "check the credentials (" + credentials +
           "; sexpgpu doctor shows which it uses), AWS_PROFILE, and that they may read s3://" +
           url.bucket + "/";
  if (a.status >= 500)
    return "the server kept failing: try again later (SEXPGPU_S3_RETRIES sets the retries)";
  return "see the S3 error code above";
}

}  // namespace

void parse_error_body(std::string_view xml, Answer& answer) {
  answer.code = element(xml, "Code");
  answer.message = element(xml, "Message");
  answer.region = element(xml, "Region");
}

Failed request_failure(const Url& url, std::string_view doing, const Answer& answer, int attempts,
                       const std::string& endpoint, const std::string& credential_detail) {
  std::string m = url.text() + ": " + std::string(doing) + ": ";
  if (answer.status == 0) {
    m += "no answer (" + answer.transport + ")";
  } else {
    m += "HTTP " + std::to_string(answer.status);
    if (!answer.code.empty()) m += " " + answer.code;
    if (!answer.message.empty()) m += ": " + answer.message;
  }
  if (attempts > 1) m += " (" + std::to_string(attempts) + " attempts)";
  Failed f = fail("E-S3", m);
  f.diagnostic.fix = fix_for(url, answer, endpoint, credential_detail);
  return f;
}

Failed object_failure(const Url& url, const std::string& message, const std::string& fix) {
  Failed f = fail("E-S3", url.text() + ": " + message);
  f.diagnostic.fix = fix;
  return f;
}

}  // namespace sexpgpu::s3
