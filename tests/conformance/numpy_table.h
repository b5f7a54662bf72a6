// An independent check of the reference itself: ops on fixed operands whose
// expected results NumPy and PyTorch computed (numpy_reference.py prints
// numpy_expected.inc). Each entry becomes a Prepared case, so every device
// runs it exactly like the generated cases.
#pragma once

#include <vector>

#include "reference.h"

namespace conformance {

std::vector<Prepared> numpy_cases();

}  // namespace conformance
