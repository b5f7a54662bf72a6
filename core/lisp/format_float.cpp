// The float directives of `format` (see format_float.h): SBCL's
// FLONUM-TO-DIGITS (Burger & Dybvig's free-format algorithm, extended by
// SBCL to stop at a digit position), FLONUM-TO-STRING, SCALE-EXPONENT and the
// ~F ~E ~G ~$ drivers, in that order. Names follow SBCL's so the two can be
// read side by side.
#include "lisp/format_float.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sexpgpu::lisp::fmtfloat {

namespace {

// ---- just enough unsigned big-integer arithmetic -----------------------------------
// Digit generation compares and subtracts exact scaled values up to about
// 2^1100 (the largest double times 10^k), so 64-bit integers do not suffice.

struct Big {
  std::vector<uint32_t> limb;  // little-endian, no high zero limbs

  static Big of(uint64_t v) {
    Big b;
    while (v) {
      b.limb.push_back(uint32_t(v));
      v >>= 32;
    }
    return b;
  }
  void trim() {
    while (!limb.empty() && limb.back() == 0) limb.pop_back();
  }
  Big& mul(uint32_t m) {
    uint64_t carry = 0;
    for (uint32_t& x : limb) {
      uint64_t t = uint64_t(x) * m + carry;
      x = uint32_t(t);
      carry = t >> 32;
    }
    if (carry) limb.push_back(uint32_t(carry));
    trim();
    return *this;
  }
  Big& mul_pow10(int64_t n) {
    for (; n >= 9; n -= 9) mul(1000000000u);
    for (; n > 0; --n) mul(10);
    return *this;
  }
  Big& shl(int64_t bits) {
    if (limb.empty() || bits == 0) return *this;
    size_t words = size_t(bits / 32);
    int rest = int(bits % 32);
    limb.insert(limb.begin(), words, 0);
    if (rest) {
      uint32_t carry = 0;
      for (size_t i = words; i < limb.size(); ++i) {
        uint32_t x = limb[i];
        limb[i] = (x << rest) | carry;
        carry = x >> (32 - rest);
      }
      if (carry) limb.push_back(carry);
    }
    return *this;
  }
  Big& add(const Big& o) {
    if (limb.size() < o.limb.size()) limb.resize(o.limb.size(), 0);
    uint64_t carry = 0;
    for (size_t i = 0; i < limb.size(); ++i) {
      uint64_t t = uint64_t(limb[i]) + (i < o.limb.size() ? o.limb[i] : 0) + carry;
      limb[i] = uint32_t(t);
      carry = t >> 32;
    }
    if (carry) limb.push_back(uint32_t(carry));
    return *this;
  }
  Big& sub(const Big& o) {  // requires *this >= o
    int64_t borrow = 0;
    for (size_t i = 0; i < limb.size(); ++i) {
      int64_t t = int64_t(limb[i]) - (i < o.limb.size() ? o.limb[i] : 0) - borrow;
      borrow = t < 0;
      limb[i] = uint32_t(t + (borrow ? (int64_t(1) << 32) : 0));
    }
    trim();
    return *this;
  }
};

int cmp(const Big& a, const Big& b) {
  if (a.limb.size() != b.limb.size()) return a.limb.size() < b.limb.size() ? -1 : 1;
  for (size_t i = a.limb.size(); i-- > 0;)
    if (a.limb[i] != b.limb[i]) return a.limb[i] < b.limb[i] ? -1 : 1;
  return 0;
}
Big plus(Big a, const Big& b) {
  return a.add(b);
}
Big times(Big a, uint32_t m) {
  return a.mul(m);
}

// ---- FLONUM-TO-DIGITS ---------------------------------------------------------------

struct Digits {
  int64_t k = 0;  // the value is 0.DIGITS * 10^k
  std::string digits;
};

constexpr int kFloatDigits = 53;
// Half a unit at 10^-400 is below every double's half-gap (s < 10^330 and
// the gaps are at least 1 in these units), so stopping at any finer position
// generates the same digits: positions are clamped here, which keeps
// (format nil "~,100000f" x) from computing with 10^100000.
constexpr int64_t kFinestPosition = -400;
constexpr int kMinE = 2 - 1022 - 53;  // SBCL's double-float-min-e

struct State {
  Big r, s, mp, mm;  // value r/s, half-gaps m+/s and m-/s
  bool high_ok, low_ok;
};

// The digit loop: SBCL's GENERATE.
void generate(State& st, std::string& out) {
  for (;;) {
    st.r.mul(10);
    int d = 0;
    while (cmp(st.r, st.s) >= 0) {
      st.r.sub(st.s);
      ++d;
    }
    st.mp.mul(10);
    st.mm.mul(10);
    int c1 = cmp(st.r, st.mm);
    bool tc1 = c1 < 0 || (st.low_ok && c1 == 0);
    int c2 = cmp(plus(st.r, st.mp), st.s);
    bool tc2 = c2 > 0 || (st.high_ok && c2 == 0);
    if (!(tc1 || tc2)) {
      out += char('0' + d);
      continue;
    }
    if (!tc1 && tc2) {
      ++d;
    } else if (tc1 && !tc2) {
    } else if (cmp(times(st.r, 2), st.s) >= 0) {
      ++d;
    }
    out += char('0' + d);  // SBCL never reaches d = 10 here
    return;
  }
}

// POSITION (when given) is where digit generation stops: an absolute power of
// ten, or with RELATIVE the number of significant digits.
Digits flonum_to_digits(double v, std::optional<int64_t> position = {}, bool relative = false) {
  Digits res;
  if (v == 0) {
    res.digits.assign(1, '0');
    return res;
  }
  int exp2;
  double m = std::frexp(v, &exp2);
  uint64_t f = uint64_t(std::ldexp(m, kFloatDigits));
  int64_t e = exp2 - kFloatDigits;  // v = f * 2^e with f of 53 bits (subnormals too)
  const uint64_t hidden = uint64_t(1) << (kFloatDigits - 1);
  State st;
  st.high_ok = st.low_ok = (f % 2 == 0);
  if (e >= 0) {
    Big be = Big::of(1).shl(e);
    st.mm = be;
    if (f != hidden) {
      st.r = Big::of(f).shl(e + 1);
      st.s = Big::of(2);
      st.mp = be;
    } else {
      st.mp = Big::of(1).shl(e + 1);
      st.r = Big::of(f).shl(e + 2);
      st.s = Big::of(4);
    }
  } else if (e == kMinE || f != hidden) {
    st.r = Big::of(f * 2);
    st.s = Big::of(1).shl(1 - e);
    st.mp = Big::of(1);
    st.mm = Big::of(1);
  } else {
    st.r = Big::of(f).shl(2);
    st.s = Big::of(1).shl(2 - e);
    st.mp = Big::of(2);
    st.mm = Big::of(1);
  }
  int64_t k;
  if (!position) {
    // SCALE and FIXUP: estimate k, correct it by one.
    static const double log10_2 = std::log(2.0) / std::log(10.0);
    int64_t est = int64_t(std::ceil(double(e + kFloatDigits - 1) * log10_2 - 1.0e-10));
    if (est >= 0) {
      st.s.mul_pow10(est);
    } else {
      st.r.mul_pow10(-est);
      st.mp.mul_pow10(-est);
      st.mm.mul_pow10(-est);
    }
    k = est;
    int c = cmp(plus(st.r, st.mp), st.s);
    if (st.high_ok ? c >= 0 : c > 0) {
      ++k;
      st.s.mul(10);
    }
  } else {
    int64_t pos = *position;
    if (relative) {
      // k-hat: the number of digits before the point.
      int64_t kh = 0;
      Big l = st.s, rm = plus(st.r, st.mp);
      while (cmp(l, rm) < 0) {
        ++kh;
        l.mul(10);
      }
      int64_t n = kh - pos;  // is r + s*10^n/2 < s*10^kh ?
      Big lhs = st.r, rhs = l;
      Big half = st.s;
      if (n < kFinestPosition) {
        lhs = Big();  // s*10^n/2 < 1 <= s*10^kh - r: true (see kFinestPosition)
      } else if (n >= 0) {
        lhs.mul(2).add(half.mul_pow10(n));
        rhs.mul(2);
      } else {
        lhs.mul(2).mul_pow10(-n).add(half);
        rhs.mul(2).mul_pow10(-n);
      }
      pos = cmp(lhs, rhs) < 0 ? kh - pos : kh - pos - 1;
    }
    pos = std::max(pos, kFinestPosition);
    // Widen both half-gaps to half a unit at POS: scale everything by
    // 2*10^max(0,-pos) so that unit is an integer.
    Big x = st.s;
    if (pos >= 0) {
      x.mul_pow10(pos);
    } else {
      st.r.mul_pow10(-pos);
      st.s.mul_pow10(-pos);
      st.mp.mul_pow10(-pos);
      st.mm.mul_pow10(-pos);
    }
    st.r.mul(2);
    st.s.mul(2);
    st.mp.mul(2);
    st.mm.mul(2);
    if (cmp(st.mm, x) < 0) st.mm = x;
    if (cmp(st.mp, x) < 0) st.mp = x;
    st.low_ok = st.high_ok = true;
    k = 0;
    for (;;) {
      int c = cmp(plus(st.r, st.mp), st.s);
      if (!(c > 0 || (st.high_ok && c == 0))) break;
      st.s.mul(10);
      ++k;
    }
    for (;;) {
      if (cmp(st.r, st.mm) <= 0) break;  // SBCL's extension for values rounding to zero
      int c = cmp(times(plus(st.r, st.mp), 10), st.s);
      if (!(c < 0 || (!st.high_ok && c == 0))) break;
      --k;
      st.r.mul(10);
      st.mp.mul(10);
      st.mm.mul(10);
    }
  }
  res.k = k;
  generate(st, res.digits);
  return res;
}

// ---- FLONUM-TO-STRING ---------------------------------------------------------------

struct FlonumString {
  std::string str;
  bool lpoint = false, tpoint = false;
  int64_t point = 0;  // index of the '.'
};

FlonumString flonum_to_string(double x, Opt width = {}, Opt fdigits = {}, Opt scale = {},
                              Opt fmin = {}) {
  int64_t sc = scale.value_or(0), fm = fmin.value_or(0);
  Digits dg;
  if (fdigits) {
    dg = flonum_to_digits(x, std::min(-(*fdigits + sc), -fm));
  } else if (width && *width > 1) {
    Digits w = flonum_to_digits(x, std::max<int64_t>(1, *width - 1 + (sc < 0 ? sc : 0)), true);
    Digits f = flonum_to_digits(x, -(fm + sc));
    dg = w.digits.size() >= f.digits.size() ? w : f;
  } else {
    dg = flonum_to_digits(x);
  }
  int64_t e = x == 0 ? dg.k : dg.k + sc;
  const std::string& s = dg.digits;
  int64_t len = int64_t(s.size());
  std::string out;
  if (e > 0) {
    int64_t cut = std::min(len, e);
    out.append(s, 0, size_t(cut));
    out.append(size_t(std::max<int64_t>(0, e - len)), '0');
    out += '.';
    out.append(s, size_t(cut));
    if (fdigits) out.append(size_t(std::max<int64_t>(0, *fdigits - (len - cut))), '0');
  } else {
    out += '.';
    out.append(size_t(-e), '0');
    int64_t end = fdigits ? std::min(len, std::max(fm, *fdigits + e)) : len;
    out.append(s, 0, size_t(std::max<int64_t>(0, end)));
    if (fdigits) out.append(size_t(std::max<int64_t>(0, *fdigits + e - len)), '0');
  }
  FlonumString r;
  r.lpoint = out.front() == '.';
  r.tpoint = out.back() == '.';
  r.point = int64_t(out.find('.'));
  r.str = std::move(out);
  return r;
}

// ---- SCALE-EXPONENT -------------------------------------------------------------------
// x (>= 0) as z * 10^ex with z in (0.1, 1], computed in floating point as
// SBCL does (so inexactly: ~E prints what this gives).

std::pair<double, int64_t> scale_exponent(double x) {
  if (x == 0) return {0.0, 1};
  int exponent;
  std::frexp(x, &exponent);
  static const double log10_2 = std::log(2.0) / std::log(10.0);
  int64_t ex = int64_t(std::nearbyint(double(exponent) * log10_2));
  if (ex < 0) {
    if (x < 2.2250738585072014e-308)  // denormalized
      x = x * 1.0e16 * std::pow(10.0, double(-ex - 16));
    else
      x = x * 10.0 * std::pow(10.0, double(-ex - 1));
  } else {
    x = x / 10.0 / std::pow(10.0, double(ex - 1));
  }
  double d = 10.0, y = x;
  while (!(y < 1.0)) {
    y = x / d;
    d *= 10.0;
    ++ex;
  }
  double m = 10.0, z = y;
  while (!(z >= 0.1)) {
    z = y * m;
    m *= 10.0;
    --ex;
  }
  return {z, ex};
}

void put(std::u32string& out, const std::string& s) {
  out.append(s.begin(), s.end());
}
void repeat(std::u32string& out, int64_t n, char32_t c) {
  if (n > 0) out.append(size_t(n), c);
}

// Infinities and NaN print as prin1 does.
std::string special_float(double x) {
  if (std::isnan(x)) return "#<DOUBLE-FLOAT quiet NaN>";
  return x > 0 ? "#.SB-EXT:DOUBLE-FLOAT-POSITIVE-INFINITY"
               : "#.SB-EXT:DOUBLE-FLOAT-NEGATIVE-INFINITY";
}

}  // namespace

// ---- the directives -----------------------------------------------------------------

bool format_fixed(std::u32string& out, double x, const FloatParams& p) {
  if (!std::isfinite(x)) {
    put(out, special_float(x));
    return false;
  }
  bool neg = std::signbit(x);
  Opt spaceleft = p.w;
  if (p.w && (p.atsign || neg)) --*spaceleft;
  FlonumString fs = flonum_to_string(std::fabs(x), spaceleft, p.d, p.k);
  bool lpoint = fs.lpoint, tpoint = fs.tpoint;
  if (p.d && *p.d == 0) tpoint = false;
  if (p.w) {
    *spaceleft -= int64_t(fs.str.size());
    if (lpoint) {
      if (*spaceleft > 0 || tpoint)
        --*spaceleft;
      else
        lpoint = false;
    }
    if (tpoint) {
      if (*spaceleft > 0)
        --*spaceleft;
      else
        tpoint = false;
    }
  }
  if (p.w && *spaceleft < 0 && p.ovf) {
    repeat(out, *p.w, *p.ovf);
    return true;
  }
  if (p.w) repeat(out, *spaceleft, p.pad);
  if (neg)
    out += U'-';
  else if (p.atsign)
    out += U'+';
  if (lpoint) out += U'0';
  put(out, fs.str);
  if (tpoint) out += U'0';
  return false;
}

void format_exp(std::u32string& out, double x, const FloatParams& p) {
  if (!std::isfinite(x)) {
    put(out, special_float(x));
    return;
  }
  bool neg = std::signbit(x);
  auto [num, expt] = scale_exponent(std::fabs(x));
  int64_t k = p.k.value_or(1);
  if (num == 1.0) --k;
  expt -= k;
  std::string estr = std::to_string(expt < 0 ? -expt : expt);
  int64_t elen = p.e ? std::max<int64_t>(int64_t(estr.size()), *p.e) : int64_t(estr.size());
  Opt spaceleft;
  if (p.w) {
    spaceleft = *p.w - 2 - elen;
    if (p.atsign || neg) --*spaceleft;
  }
  if (p.w && p.ovf && p.e && elen > *p.e) {  // exponent overflow
    repeat(out, *p.w, *p.ovf);
    return;
  }
  Opt fdig, fmin;
  if (p.d) fdig = k > 0 ? *p.d - k + 1 : *p.d;
  fmin = k < 0 ? Opt(1) : fdig;
  FlonumString fs = flonum_to_string(num, spaceleft, fdig, k, fmin);
  bool lpoint = fs.lpoint, tpoint = fs.tpoint;
  if (fdig && *fdig == 0) tpoint = false;
  if (p.w) {
    *spaceleft -= int64_t(fs.str.size());
    if (lpoint) {
      if (*spaceleft > 0 || tpoint)
        --*spaceleft;
      else
        lpoint = false;
    }
    if (tpoint) {
      if (*spaceleft <= 0)
        tpoint = false;
      else
        --*spaceleft;
    }
  }
  if (p.w && *spaceleft < 0 && p.ovf) {  // significand overflow
    repeat(out, *p.w, *p.ovf);
    return;
  }
  if (p.w) repeat(out, *spaceleft, p.pad);
  if (neg)
    out += U'-';
  else if (p.atsign)
    out += U'+';
  if (lpoint) out += U'0';
  put(out, fs.str);
  if (tpoint) out += U'0';
  out += p.marker ? p.marker : U'e';
  out += expt < 0 ? U'-' : U'+';
  if (p.e) repeat(out, *p.e - int64_t(estr.size()), U'0');
  put(out, estr);
}

void format_general(std::u32string& out, double x, const FloatParams& p) {
  if (!std::isfinite(x)) {
    put(out, special_float(x));
    return;
  }
  int64_t n = scale_exponent(std::fabs(x)).second;
  int64_t d;
  if (p.d) {
    d = *p.d;
  } else {
    int64_t len = int64_t(flonum_to_string(std::fabs(x)).str.size());
    int64_t q = len == 1 ? 1 : len - 1;
    d = std::max(q, std::min<int64_t>(n, 7));
  }
  int64_t ee = p.e ? *p.e + 2 : 4;
  Opt ww = p.w ? Opt(*p.w - ee) : Opt();
  int64_t dd = d - n;
  if (0 <= dd && dd <= d) {
    FloatParams fp = p;
    fp.w = ww;
    fp.d = dd;
    fp.k.reset();
    bool overflowed = format_fixed(out, x, fp);
    repeat(out, ee, overflowed ? *p.ovf : U' ');
  } else {
    FloatParams ep = p;
    ep.d = d;
    ep.k = p.k.value_or(1);
    format_exp(out, x, ep);
  }
}

void format_dollars(std::u32string& out, double x, int64_t d, int64_t n, int64_t w, char32_t pad,
                    bool colon, bool atsign) {
  if (!std::isfinite(x)) {
    put(out, special_float(x));
    return;
  }
  std::string sign = std::signbit(x) ? "-" : (atsign ? "+" : "");
  FlonumString fs = flonum_to_string(std::fabs(x), {}, d, {});
  if (colon) put(out, sign);
  repeat(out, w - int64_t(sign.size()) - std::max(n, fs.point) - 1 - d, pad);
  if (!colon) put(out, sign);
  repeat(out, n - fs.point, U'0');
  put(out, fs.str);
}

}  // namespace sexpgpu::lisp::fmtfloat
