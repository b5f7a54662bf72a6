// The reader: text -> forms, with a source span on every list and every
// element of a list (see Cons::span / Cons::car_span). Errors are E-READ at
// the opening token (E-OVERFLOW for an integer past 64 bits).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "lisp/interp.h"

namespace sexpgpu::lisp {

struct ReadForm {
  Value form;
  Span span;
};

class Reader {
 public:
  Reader(Interp& in, uint32_t file_id);
  // Reads the next top-level form; false at end of input. Throws LispError.
  bool next(ReadForm& out);
  // After an error: continue at the next line that starts with '(' in column 1,
  // so one broken form does not hide the errors of the ones after it.
  void recover();
  size_t offset() const { return pos_; }

  static constexpr int kMaxDepth = 10'000;

 private:
  Interp& in_;
  uint32_t file_;
  const std::string& text_;
  size_t pos_ = 0;
  int depth_ = 0;
  // #n= labels of the top-level form being read (CL: one outermost read).
  std::unordered_map<int64_t, Value> labels_;

  Value read(uint32_t* span_out);
  Value read_list(size_t open, char close);
  Value read_token_or_number(size_t start);
  Value read_string(size_t start);
  Value read_dispatch(size_t start, uint32_t* span_out);
  Value read_char_literal(size_t start);
  Value read_bit_vector(size_t start, std::string_view arg);
  int64_t label_number(size_t start, std::string_view arg, char d);
  bool skip_ws_and_comments();  // false at EOF
  void skip_block_comment(size_t start);
  bool eval_feature(Value expr);
  Span make_span(size_t begin, size_t end) const;
  uint32_t span_id(size_t begin, size_t end);
  [[noreturn]] void error(size_t at, const std::string& msg, const char* code = "E-READ");
  int peek() const { return pos_ < text_.size() ? (unsigned char)text_[pos_] : -1; }
  Value wrap(Symbol* head, Value x, uint32_t x_span, size_t begin);
};

// Read every form of a registered file. Reader errors are reported to the
// interpreter's sink; reading resumes at the next top-level paragraph.
std::vector<ReadForm> read_file_forms(Interp& in, uint32_t file_id);

// Read one form from a string (for -e); throws LispError on errors.
std::vector<ReadForm> read_string_forms(Interp& in, const std::string& name,
                                        const std::string& text);

// Parse a token as a number: returns false if it is not one. Sets *overflow
// when it is an integer that does not fit in 64 bits.
bool parse_number(std::string_view tok, int radix, Value& out, bool* overflow);

}  // namespace sexpgpu::lisp
