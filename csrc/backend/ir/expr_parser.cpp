// Recursive-descent parser for index expressions (expr_parser.h): sums, products, //, %, calls.
// Assumes well-formed ASCII input; errors quote the text and the position.
#include "backend/ir/expr_parser.h"
#include <cctype>
#include "common/error.h"

namespace cdynamo::ir {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Expr parse() {
    Expr e = sum();
    skip();
    if (pos_ != text_.size()) fail("unexpected text");
    return e;
  }

 private:
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(const std::string& token) {
    skip();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  [[noreturn]] void fail(const std::string& what) {
    throw UserError("index expression \"" + text_ + "\": " + what + " at position " + std::to_string(pos_), PyExc_ValueError);
  }

  Expr sum() {
    Expr e = product();
    for (;;) {
      if (accept("+")) e = e + product();
      else if (accept("-")) e = e - product();
      else return e;
    }
  }
  Expr product() {
    Expr e = unary();
    for (;;) {
      if (accept("//")) e = floordiv(e, unary());
      else if (accept("*")) e = e * unary();
      else if (accept("%")) e = mod(e, unary());
      else return e;
    }
  }
  Expr unary() {
    if (accept("-")) return Expr(0) - unary();
    return atom();
  }
  Expr atom() {
    skip();
    if (accept("(")) {
      Expr e = sum();
      if (!accept(")")) fail("expected )");
      return e;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return Expr(static_cast<int64_t>(std::stoll(text_.substr(start, pos_ - start))));
    }
    if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      std::string name = text_.substr(start, pos_ - start);
      if ((name == "min" || name == "max") && accept("(")) {
        Expr a = sum();
        if (!accept(",")) fail("expected ,");
        Expr b = sum();
        if (!accept(")")) fail("expected )");
        return name == "min" ? min(a, b) : max(a, b);
      }
      return Expr::var(name);
    }
    fail("expected a number, a name or (");
  }

  const std::string& text_;
  size_t pos_ = 0;
};

}  // namespace

Expr parse_expr(const std::string& text) { return Parser(text).parse(); }

}  // namespace cdynamo::ir
