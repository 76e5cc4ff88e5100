// An indented text buffer for generated Python (Triton) source: lines, indented blocks, fresh
// names. Assumes callers balance open()/close(); nothing here knows about Triton semantics.
#pragma once
#include <string>

namespace cdynamo::codegen::triton {

class PyWriter {
 public:
  void line(const std::string& text) {
    if (text.empty()) {
      out_ += '\n';
      return;
    }
    out_.append(static_cast<size_t>(indent_) * 4, ' ');
    out_ += text;
    out_ += '\n';
  }
  // Writes `header:` and indents the lines that follow until close().
  void open(const std::string& header) {
    line(header + ":");
    ++indent_;
  }
  void close() { --indent_; }
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
  int counter_ = 0;
};

}  // namespace cdynamo::codegen::triton
