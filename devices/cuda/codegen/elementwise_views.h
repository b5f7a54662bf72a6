// Fusion groups with views (elementwise.h, is_view): each thread computes
// the output element at flat index i, and every member is evaluated at the
// position its readers ask for, mapped back through the views: permute
// renames coordinates, slice scales and shifts them, flip mirrors them,
// expand and broadcasting zero them, reshape keeps the flat index (or
// splits and merges axis groups), and pad shifts them behind a guard that
// chooses its value outside. The plan is data (ViewPlan) so that a test can
// run it on the host; view_source prints it as CUDA.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "elementwise.h"

namespace sexpgpu::cuda {

// An integer expression of the output's flat index, with the range of
// values it takes where it is evaluated.
struct IndexExpr;
using Index = std::shared_ptr<const IndexExpr>;
struct IndexExpr {
  enum Kind { Flat, Const, Add, Mul, Div, Mod } kind;
  int64_t value = 0;  // Const: the value; Mul: the factor; Div, Mod: the divisor (> 0)
  Index a, b;         // Add: a + b; Mul, Div, Mod: a
  int64_t lo = 0, hi = 0;
};

int64_t evaluate(const Index& e, int64_t flat);

// How e changes over a vector of v elements whose first flat index is a
// multiple of v: not at all (Fixed; FixedAligned: a multiple of v too), by
// one an element from a multiple of v (Step), or otherwise.
enum class Along { Fixed, FixedAligned, Step, Other };
Along along(const Index& e, int64_t v);

// lo <= index < hi; only the sides that can fail are checked.
struct Bound {
  Index index;
  int64_t lo, hi;
};

// One step of the per-element program. Registers are numbered; a guarded
// block (a pad) starts with Fill (its register takes the pad value), then
// Guarded (the block runs when every bound holds), the operand's steps, and
// EndGuard (the register takes the operand's value).
struct ViewStep {
  enum Kind { Load, Compute, Fill, Guarded, EndGuard } kind;
  int reg = -1;               // Load, Compute, Fill: the register defined; EndGuard: the one set
  int source = 0;             // Load: the external; Compute, Fill: the group node
  Index offset;               // Load: the element's offset
  std::vector<int> operands;  // Compute: the node's operands' registers; EndGuard: {the value}
  std::vector<Bound> bounds;  // Guarded
};

struct ViewPlan {
  std::vector<ViewStep> steps;
  std::vector<ir::DType> registers;  // each register's dtype
  int result = -1;                   // the register stored to the output
  bool wide = false;                 // some index needs 64 bits
};

ir::Result<ViewPlan> plan_views(const ElementwiseGroup& group);

// How many consecutive elements a thread of the vector form takes: 16
// bytes of output (at most 8 elements) when that divides the output and
// every guard holds alike for a whole vector; 1 when there is none.
int view_vector_width(const ElementwiseGroup& group, const ViewPlan& plan);

// The kernel `name` computing the group by `plan`, v consecutive elements
// a thread (v from view_vector_width, or 1; v > 1 needs every buffer
// 16-byte aligned).
std::string view_source(const ElementwiseGroup& group, const ViewPlan& plan, int v,
                        const std::string& name);

}  // namespace sexpgpu::cuda
