// An indented text buffer for generated source code: lines, nested blocks, fresh names.
// Assumes callers balance open()/close(); nothing here knows about C++ semantics.
#pragma once
#include <string>

namespace cdynamo::codegen::cpp {

class CodeWriter {
 public:
  void line(const std::string& text) {
    if (text.empty()) {
      out_ += '\n';
      return;
    }
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }
  // Writes `header {` and indents; close() writes the matching `}` (plus an optional suffix).
  void open(const std::string& header) {
    line(header.empty() ? "{" : header + " {");
    ++indent_;
  }
  void close(const std::string& suffix = "") {
    --indent_;
    line("}" + suffix);
  }
  // Pragmas start at column 0 in most styles, but indented ones read better and are legal.
  void pragma(const std::string& text) { line("#pragma " + text); }
  // A fresh identifier with the given prefix, unique within this writer.
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
};

}  // namespace cdynamo::codegen::cpp
