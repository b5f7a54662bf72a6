// The text-producing helpers of `format` (see format_impl.h), each a port of
// the SBCL function named in its comment so the output matches SBCL's.
#include <algorithm>

#include "lisp/chars.h"
#include "lisp/format_impl.h"

namespace sexpgpu::lisp::fmt_impl {

void append_utf8(std::u32string& out, std::string_view s) {
  bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return (unsigned char)c < 128; });
  if (ascii)
    out.append(s.begin(), s.end());
  else
    out += utf8_to_u32(s);
}

// FORMAT-WRITE-FIELD.
void write_field(std::u32string& out, std::u32string_view s, int64_t mincol, int64_t colinc,
                 int64_t minpad, char32_t padchar, bool padleft) {
  if (!padleft) out += s;
  if (minpad > 0) out.append(size_t(minpad), padchar);
  int64_t chars = int64_t(s.size()) + std::max<int64_t>(minpad, 0);
  if (chars < mincol) {
    int64_t steps = (mincol - chars + colinc - 1) / colinc;
    out.append(size_t(steps * colinc), padchar);
  }
  if (padleft) out += s;
}

std::u32string integer_digits(int64_t v, int radix) {
  uint64_t m = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  std::u32string d;
  do {
    int x = int(m % uint64_t(radix));
    d += char32_t(x < 10 ? '0' + x : 'A' + x - 10);
    m /= uint64_t(radix);
  } while (m);
  std::reverse(d.begin(), d.end());
  return d;
}

// FORMAT-ADD-COMMAS.
std::u32string add_commas(const std::u32string& digits, char32_t commachar, int64_t interval) {
  std::u32string r;
  size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % size_t(interval) == 0) r += commachar;
    r += digits[i];
  }
  return r;
}

namespace {

const char* const kOnes[] = {"",     "one", "two",   "three", "four",
                             "five", "six", "seven", "eight", "nine"};
const char* const kTens[] = {"",      "",      "twenty",  "thirty", "forty",
                             "fifty", "sixty", "seventy", "eighty", "ninety"};
const char* const kTeens[] = {"ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                              "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kPeriods[] = {"",          " thousand",    " million",    " billion",
                                " trillion", " quadrillion", " quintillion"};
const char* const kOrdOnes[] = {"",      "first", "second",  "third",  "fourth",
                                "fifth", "sixth", "seventh", "eighth", "ninth"};
const char* const kOrdTens[] = {"",         "tenth",    "twentieth",  "thirtieth", "fortieth",
                                "fiftieth", "sixtieth", "seventieth", "eightieth", "ninetieth"};

void put(std::u32string& out, const char* s) {
  for (; *s; ++s) out += char32_t(*s);
}

// FORMAT-PRINT-SMALL-CARDINAL: 1..999.
void small_cardinal(std::u32string& out, uint64_t n) {
  uint64_t hundreds = n / 100, rem = n % 100;
  if (hundreds) {
    put(out, kOnes[hundreds]);
    put(out, " hundred");
    if (rem) out += U' ';
  }
  if (!rem) return;
  uint64_t tens = rem / 10, ones = rem % 10;
  if (tens > 1) {
    put(out, kTens[tens]);
    if (ones) {
      out += U'-';
      put(out, kOnes[ones]);
    }
  } else if (tens == 1) {
    put(out, kTeens[ones]);
  } else {
    put(out, kOnes[ones]);
  }
}

// FORMAT-PRINT-CARDINAL-AUX.
void cardinal_aux(std::u32string& out, uint64_t n, int period) {
  uint64_t beyond = n / 1000, here = n % 1000;
  if (beyond) cardinal_aux(out, beyond, period + 1);
  if (here) {
    if (beyond) out += U' ';
    small_cardinal(out, here);
    put(out, kPeriods[period]);
  }
}

uint64_t magnitude(int64_t n) {
  return n < 0 ? uint64_t(0) - uint64_t(n) : uint64_t(n);
}

}  // namespace

void cardinal(std::u32string& out, int64_t n) {
  if (n == 0) {
    put(out, "zero");
    return;
  }
  if (n < 0) put(out, "negative ");
  cardinal_aux(out, magnitude(n), 0);
}

// FORMAT-PRINT-ORDINAL.
void ordinal(std::u32string& out, int64_t n) {
  if (n < 0) put(out, "negative ");
  uint64_t number = magnitude(n);
  uint64_t top = number / 100, bot = number % 100;
  if (top) cardinal_aux(out, number - bot, 0);
  if (top && bot) out += U' ';
  uint64_t tens = bot / 10, ones = bot % 10;
  if (bot == 12) {
    put(out, "twelfth");
  } else if (tens == 1) {
    put(out, kTeens[ones]);
    put(out, "th");
  } else if (tens == 0 && ones) {
    put(out, kOrdOnes[ones]);
  } else if (ones == 0 && tens) {
    put(out, kOrdTens[tens]);
  } else if (bot) {
    put(out, kTens[tens]);
    out += U'-';
    put(out, kOrdOnes[ones]);
  } else if (number) {
    put(out, "th");
  } else {
    put(out, "zeroth");
  }
}

// FORMAT-PRINT-ROMAN and FORMAT-PRINT-OLD-ROMAN.
bool roman(std::u32string& out, int64_t n, bool old_style) {
  if (n <= 0 || n >= (old_style ? 5000 : 4000)) return false;
  static const char32_t chars[] = {U'M', U'D', U'C', U'L', U'X', U'V', U'I'};
  static const int64_t vals[] = {1000, 500, 100, 50, 10, 5, 1};
  // The subtractive prefix of each numeral: CM, CD, XC, XL, IX, IV.
  static const char32_t sub_chars[] = {U'C', U'C', U'X', U'X', U'I', U'I', 0};
  static const int64_t sub_vals[] = {100, 100, 10, 10, 1, 1, 0};
  for (int i = 0; i < 7 && n > 0; ++i) {
    for (; n >= vals[i]; n -= vals[i]) out += chars[i];
    if (!old_style && sub_vals[i] && n >= vals[i] - sub_vals[i]) {
      out += sub_chars[i];
      out += chars[i];
      n -= vals[i] - sub_vals[i];
    }
  }
  return true;
}

// FORMAT-PRINT-NAMED-CHARACTER.
void named_char(std::u32string& out, char32_t c) {
  if (c != U' ' && graphic_char_p(c)) {
    out += c;
    return;
  }
  std::string name = char_name_of(c);
  bool word_start = true;  // string-capitalize
  for (char ch : name) {
    bool alnum = std::isalnum((unsigned char)ch);
    char32_t x = char32_t((unsigned char)ch);
    out += alnum ? (word_start ? char_upcase(x) : char_downcase(x)) : x;
    word_start = !alnum;
  }
}

// SBCL's case-frob streams, applied to what the body wrote.
void convert_case(std::u32string& out, size_t start, CaseMode mode) {
  bool in_word = false, seen_first = false;
  for (size_t i = start; i < out.size(); ++i) {
    char32_t& c = out[i];
    switch (mode) {
      case CaseMode::Downcase: c = char_downcase(c); break;
      case CaseMode::Upcase: c = char_upcase(c); break;
      case CaseMode::Capitalize:
        if (alphanumeric_p(c)) {
          c = in_word ? char_downcase(c) : char_upcase(c);
          in_word = true;
        } else {
          in_word = false;
        }
        break;
      case CaseMode::CapitalizeFirst:
        if (!seen_first && alphanumeric_p(c)) {
          c = char_upcase(c);
          seen_first = true;
        } else {
          c = char_downcase(c);
        }
        break;
    }
  }
}

// FORMAT-JUSTIFICATION.
void justify(std::u32string& out, const std::vector<std::u32string>& strings, const Justify& j) {
  int64_t num_gaps = int64_t(strings.size()) - 1 + (j.pad_left ? 1 : 0) + (j.pad_right ? 1 : 0);
  int64_t chars = num_gaps * j.minpad;
  for (const auto& s : strings) chars += int64_t(s.size());
  int64_t length = chars > j.mincol
                       ? j.mincol + (chars - j.mincol + j.colinc - 1) / j.colinc * j.colinc
                       : j.mincol;
  int64_t padding = length - chars + num_gaps * j.minpad;
  if (j.newline_prefix && j.column + length + j.extra > j.line_len) out += *j.newline_prefix;
  auto do_padding = [&] {
    int64_t pad_len = num_gaps == 0 ? padding : padding / num_gaps;
    padding -= pad_len;
    --num_gaps;
    if (pad_len > 0) out.append(size_t(pad_len), j.padchar);
  };
  if (j.pad_left || (!j.pad_right && strings.size() <= 1)) do_padding();
  if (!strings.empty()) {
    out += strings[0];
    for (size_t i = 1; i < strings.size(); ++i) {
      do_padding();
      out += strings[i];
    }
  }
  if (j.pad_right) do_padding();
}

}  // namespace sexpgpu::lisp::fmt_impl
