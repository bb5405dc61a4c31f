//===- ChatTemplate.cpp - A Jinja subset for chat templates ---------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/ChatTemplate.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>

using namespace rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "chat template: " + msg);
}

namespace {

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

struct Value;
using List = std::vector<Value>;
using Dict = std::map<std::string, Value>;

struct Value {
  enum Kind { Undefined, None, Bool, Int, Str, ListK, DictK } kind = Undefined;
  bool b = false;
  int64_t i = 0;
  std::string s;
  std::shared_ptr<List> list;
  std::shared_ptr<Dict> dict;

  static Value none() { return Value{None}; }
  static Value boolean(bool v) {
    Value r{Bool};
    r.b = v;
    return r;
  }
  static Value integer(int64_t v) {
    Value r{Int};
    r.i = v;
    return r;
  }
  static Value str(std::string v) {
    Value r{Str};
    r.s = std::move(v);
    return r;
  }
  static Value makeList(List v) {
    Value r{ListK};
    r.list = std::make_shared<List>(std::move(v));
    return r;
  }
  static Value makeDict(Dict v) {
    Value r{DictK};
    r.dict = std::make_shared<Dict>(std::move(v));
    return r;
  }

  bool truthy() const {
    switch (kind) {
    case Undefined:
    case None:
      return false;
    case Bool:
      return b;
    case Int:
      return i != 0;
    case Str:
      return !s.empty();
    case ListK:
      return !list->empty();
    case DictK:
      return !dict->empty();
    }
    return false;
  }

  std::string toString() const {
    switch (kind) {
    case Undefined:
      return "";
    case None:
      return "None";
    case Bool:
      return b ? "True" : "False";
    case Int:
      return std::to_string(i);
    case Str:
      return s;
    case ListK:
    case DictK:
      return "<" + std::string(kind == ListK ? "list" : "dict") + ">";
    }
    return "";
  }

  bool equals(const Value &o) const {
    if (kind == Int && o.kind == Bool)
      return i == o.b;
    if (kind == Bool && o.kind == Int)
      return b == o.i;
    if (kind != o.kind)
      return (kind == Undefined || kind == None) &&
             (o.kind == Undefined || o.kind == None) && kind == o.kind;
    switch (kind) {
    case Undefined:
    case None:
      return true;
    case Bool:
      return b == o.b;
    case Int:
      return i == o.i;
    case Str:
      return s == o.s;
    case ListK:
      if (list->size() != o.list->size())
        return false;
      for (size_t k = 0; k < list->size(); ++k)
        if (!(*list)[k].equals((*o.list)[k]))
          return false;
      return true;
    case DictK:
      return dict == o.dict;
    }
    return false;
  }
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  enum Kind {
    Literal,
    Var,
    Attr,
    Index,
    Slice,
    Call,
    Filter,
    Test,
    Unary,
    Binary,
    Cond,
    ListLit,
  } kind;
  Value value;
  std::string name; // Var, Attr, Call (method), Filter, Test, Unary/Binary op
  ExprPtr a, b, c;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;
};

struct Tok {
  enum Kind { Name, String, Int, Op, End } kind;
  std::string text;
};

Expected<std::vector<Tok>> lexExpr(StringRef s) {
  std::vector<Tok> out;
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (llvm::isSpace(c)) {
      ++i;
      continue;
    }
    if (llvm::isAlpha(c) || c == '_') {
      size_t j = i;
      while (j < s.size() && (llvm::isAlnum(s[j]) || s[j] == '_'))
        ++j;
      out.push_back({Tok::Name, s.substr(i, j - i).str()});
      i = j;
      continue;
    }
    if (llvm::isDigit(c)) {
      size_t j = i;
      while (j < s.size() && llvm::isDigit(s[j]))
        ++j;
      if (j < s.size() && s[j] == '.')
        return fail("float literals are not supported ('" + s + "')");
      out.push_back({Tok::Int, s.substr(i, j - i).str()});
      i = j;
      continue;
    }
    if (c == '\'' || c == '"') {
      std::string v;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != c; ++j) {
        if (s[j] == '\\' && j + 1 < s.size()) {
          char e = s[++j];
          v.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
        } else {
          v.push_back(s[j]);
        }
      }
      if (j >= s.size())
        return fail("unterminated string in '" + s + "'");
      out.push_back({Tok::String, v});
      i = j + 1;
      continue;
    }
    static const char *const kOps[] = {"==", "!=", "<=", ">=", "//", "**"};
    bool two = false;
    for (const char *op : kOps)
      if (s.substr(i).starts_with(op)) {
        if (StringRef(op) == "//" || StringRef(op) == "**")
          return fail("operator '" + StringRef(op) + "' is not supported");
        out.push_back({Tok::Op, op});
        i += 2;
        two = true;
        break;
      }
    if (two)
      continue;
    if (StringRef("+-*/%~<>()[].,|:=").contains(c)) {
      out.push_back({Tok::Op, std::string(1, c)});
      ++i;
      continue;
    }
    return fail("unexpected character '" + std::string(1, c) + "' in '" + s +
                "'");
  }
  out.push_back({Tok::End, ""});
  return out;
}

class ExprParser {
public:
  ExprParser(std::vector<Tok> toks, StringRef source)
      : toks(std::move(toks)), source(source.str()) {}

  Expected<ExprPtr> parseAll() {
    Expected<ExprPtr> e = parse();
    if (!e)
      return e;
    if (peek().kind != Tok::End)
      return fail("unexpected '" + peek().text + "' in '" + source + "'");
    return e;
  }
  Expected<ExprPtr> parse() { return parseCond(); }
  const Tok &peek(size_t k = 0) const {
    return toks[std::min(pos + k, toks.size() - 1)];
  }
  bool isOp(StringRef op, size_t k = 0) const {
    return peek(k).kind == Tok::Op && peek(k).text == op;
  }
  bool isName(StringRef n, size_t k = 0) const {
    return peek(k).kind == Tok::Name && peek(k).text == n;
  }
  Error expectOp(StringRef op) {
    if (!isOp(op))
      return fail("expected '" + op + "' in '" + source + "'");
    ++pos;
    return Error::success();
  }
  size_t pos = 0;

private:
  static ExprPtr make(Expr::Kind k) {
    auto e = std::make_shared<Expr>();
    e->kind = k;
    return e;
  }

  Expected<ExprPtr> parseCond() {
    Expected<ExprPtr> e = parseOr();
    if (!e)
      return e;
    if (!isName("if"))
      return e;
    ++pos;
    Expected<ExprPtr> cond = parseOr();
    if (!cond)
      return cond;
    ExprPtr r = make(Expr::Cond);
    r->a = *e;
    r->b = *cond;
    if (isName("else")) {
      ++pos;
      Expected<ExprPtr> other = parseCond();
      if (!other)
        return other;
      r->c = *other;
    }
    return r;
  }
  Expected<ExprPtr> binary(StringRef op, ExprPtr l,
                           Expected<ExprPtr> (ExprParser::*next)()) {
    Expected<ExprPtr> r = (this->*next)();
    if (!r)
      return r;
    ExprPtr e = make(Expr::Binary);
    e->name = op.str();
    e->a = std::move(l);
    e->b = *r;
    return e;
  }
  Expected<ExprPtr> parseOr() {
    Expected<ExprPtr> e = parseAnd();
    while (e && isName("or")) {
      ++pos;
      e = binary("or", *e, &ExprParser::parseAnd);
    }
    return e;
  }
  Expected<ExprPtr> parseAnd() {
    Expected<ExprPtr> e = parseNot();
    while (e && isName("and")) {
      ++pos;
      e = binary("and", *e, &ExprParser::parseNot);
    }
    return e;
  }
  Expected<ExprPtr> parseNot() {
    if (!isName("not"))
      return parseCompare();
    ++pos;
    Expected<ExprPtr> e = parseNot();
    if (!e)
      return e;
    ExprPtr r = make(Expr::Unary);
    r->name = "not";
    r->a = *e;
    return r;
  }
  Expected<ExprPtr> parseCompare() {
    Expected<ExprPtr> e = parseAdd();
    while (e) {
      if (isOp("==") || isOp("!=") || isOp("<") || isOp(">") || isOp("<=") ||
          isOp(">=")) {
        std::string op = peek().text;
        ++pos;
        e = binary(op, *e, &ExprParser::parseAdd);
      } else if (isName("in") || (isName("not") && isName("in", 1))) {
        bool negate = isName("not");
        pos += negate ? 2 : 1;
        e = binary(negate ? "not in" : "in", *e, &ExprParser::parseAdd);
      } else if (isName("is")) {
        ++pos;
        bool negate = isName("not");
        if (negate)
          ++pos;
        if (peek().kind != Tok::Name)
          return fail("expected a test name after 'is' in '" + source + "'");
        ExprPtr t = make(Expr::Test);
        t->name = peek().text;
        t->negated = negate;
        t->a = *e;
        ++pos;
        e = t;
      } else {
        break;
      }
    }
    return e;
  }
  Expected<ExprPtr> parseAdd() {
    Expected<ExprPtr> e = parseMul();
    while (e && (isOp("+") || isOp("-") || isOp("~"))) {
      std::string op = peek().text;
      ++pos;
      e = binary(op, *e, &ExprParser::parseMul);
    }
    return e;
  }
  Expected<ExprPtr> parseMul() {
    Expected<ExprPtr> e = parseUnary();
    while (e && (isOp("*") || isOp("/") || isOp("%"))) {
      std::string op = peek().text;
      ++pos;
      e = binary(op, *e, &ExprParser::parseUnary);
    }
    return e;
  }
  Expected<ExprPtr> parseUnary() {
    if (!isOp("-"))
      return parsePostfix();
    ++pos;
    Expected<ExprPtr> e = parseUnary();
    if (!e)
      return e;
    ExprPtr r = make(Expr::Unary);
    r->name = "-";
    r->a = *e;
    return r;
  }
  Error parseArgs(Expr &call) {
    // After '('.
    while (!isOp(")")) {
      if (peek().kind == Tok::Name && isOp("=", 1)) {
        std::string key = peek().text;
        pos += 2;
        Expected<ExprPtr> v = parse();
        if (!v)
          return v.takeError();
        call.kwargs.emplace_back(key, *v);
      } else {
        Expected<ExprPtr> v = parse();
        if (!v)
          return v.takeError();
        call.args.push_back(*v);
      }
      if (isOp(","))
        ++pos;
      else if (!isOp(")"))
        return fail("expected ',' or ')' in '" + source + "'");
    }
    ++pos;
    return Error::success();
  }
  Expected<ExprPtr> parsePostfix() {
    Expected<ExprPtr> e = parsePrimary();
    while (e) {
      if (isOp(".")) {
        ++pos;
        if (peek().kind != Tok::Name)
          return fail("expected an attribute name in '" + source + "'");
        ExprPtr r = make(Expr::Attr);
        r->a = *e;
        r->name = peek().text;
        ++pos;
        e = r;
      } else if (isOp("[")) {
        ++pos;
        ExprPtr lo, hi;
        bool slice = false;
        if (!isOp(":")) {
          Expected<ExprPtr> x = parse();
          if (!x)
            return x;
          lo = *x;
        }
        if (isOp(":")) {
          slice = true;
          ++pos;
          if (!isOp("]")) {
            Expected<ExprPtr> x = parse();
            if (!x)
              return x;
            hi = *x;
          }
        }
        if (Error err = expectOp("]"))
          return std::move(err);
        ExprPtr r = make(slice ? Expr::Slice : Expr::Index);
        r->a = *e;
        r->b = lo;
        r->c = hi;
        e = r;
      } else if (isOp("(")) {
        ++pos;
        ExprPtr r = make(Expr::Call);
        r->a = *e;
        if (Error err = parseArgs(*r))
          return std::move(err);
        e = r;
      } else if (isOp("|")) {
        ++pos;
        if (peek().kind != Tok::Name)
          return fail("expected a filter name in '" + source + "'");
        ExprPtr r = make(Expr::Filter);
        r->a = *e;
        r->name = peek().text;
        ++pos;
        if (isOp("(")) {
          ++pos;
          if (Error err = parseArgs(*r))
            return std::move(err);
        }
        e = r;
      } else {
        break;
      }
    }
    return e;
  }
  Expected<ExprPtr> parsePrimary() {
    const Tok &t = peek();
    if (t.kind == Tok::String) {
      ExprPtr r = make(Expr::Literal);
      r->value = Value::str(t.text);
      ++pos;
      // Adjacent string literals concatenate.
      while (peek().kind == Tok::String) {
        r->value.s += peek().text;
        ++pos;
      }
      return r;
    }
    if (t.kind == Tok::Int) {
      ExprPtr r = make(Expr::Literal);
      int64_t v = 0;
      StringRef(t.text).getAsInteger(10, v);
      r->value = Value::integer(v);
      ++pos;
      return r;
    }
    if (t.kind == Tok::Name) {
      ExprPtr r = make(Expr::Literal);
      if (t.text == "true" || t.text == "True")
        r->value = Value::boolean(true);
      else if (t.text == "false" || t.text == "False")
        r->value = Value::boolean(false);
      else if (t.text == "none" || t.text == "None")
        r->value = Value::none();
      else {
        r->kind = Expr::Var;
        r->name = t.text;
      }
      ++pos;
      return r;
    }
    if (isOp("(")) {
      ++pos;
      Expected<ExprPtr> e = parse();
      if (!e)
        return e;
      if (Error err = expectOp(")"))
        return std::move(err);
      return e;
    }
    if (isOp("[")) {
      ++pos;
      ExprPtr r = make(Expr::ListLit);
      while (!isOp("]")) {
        Expected<ExprPtr> e = parse();
        if (!e)
          return e;
        r->args.push_back(*e);
        if (isOp(","))
          ++pos;
        else if (!isOp("]"))
          return fail("expected ',' or ']' in '" + source + "'");
      }
      ++pos;
      return r;
    }
    return fail("unexpected '" + t.text + "' in '" + source + "'");
  }

  std::vector<Tok> toks;
  std::string source;
};

Expected<ExprPtr> parseExpr(StringRef s) {
  Expected<std::vector<Tok>> toks = lexExpr(s);
  if (!toks)
    return toks.takeError();
  ExprParser p(std::move(*toks), s);
  return p.parseAll();
}

//===----------------------------------------------------------------------===//
// Template structure
//===----------------------------------------------------------------------===//

struct Piece {
  enum Kind { Text, Output, Statement } kind;
  std::string text;
};

/// Splits the template into text, {{ }} and {% %} pieces, applying '-'
/// whitespace control, trim_blocks and lstrip_blocks (as transformers
/// configures Jinja).
Expected<std::vector<Piece>> lexTemplate(StringRef src) {
  std::vector<Piece> out;
  bool stripNext = false, trimNewline = false;
  size_t i = 0;
  while (true) {
    size_t open = i;
    while (open < src.size() && !(src[open] == '{' && open + 1 < src.size() &&
                                  StringRef("{%#").contains(src[open + 1])))
      ++open;
    std::string text = src.substr(i, open - i).str();
    if (trimNewline && !text.empty() && text[0] == '\n')
      text.erase(0, 1);
    if (stripNext)
      text = StringRef(text).ltrim().str();
    stripNext = trimNewline = false;
    if (open >= src.size()) {
      if (!text.empty())
        out.push_back({Piece::Text, text});
      break;
    }
    char kind = src[open + 1];
    char mark = open + 2 < src.size() ? src[open + 2] : 0;
    if (mark == '-') {
      text = StringRef(text).rtrim().str();
    } else if (kind != '{' && mark != '+') {
      // lstrip_blocks: the spaces and tabs between a line start and a block.
      size_t k = open;
      while (k > 0 && (src[k - 1] == ' ' || src[k - 1] == '\t'))
        --k;
      if (k == 0 || src[k - 1] == '\n')
        text.erase(text.size() - std::min(text.size(), open - k));
    }
    if (!text.empty())
      out.push_back({Piece::Text, text});
    const char *closer = kind == '{' ? "}}" : kind == '%' ? "%}" : "#}";
    size_t bodyStart = open + 2 + (mark == '-' || mark == '+' ? 1 : 0);
    size_t close = src.find(closer, bodyStart);
    if (close == StringRef::npos)
      return fail("unterminated '{" + std::string(1, kind) + "'");
    char endMark = close > bodyStart ? src[close - 1] : 0;
    size_t bodyEnd = close - (endMark == '-' || endMark == '+' ? 1 : 0);
    StringRef body = src.substr(bodyStart, bodyEnd - bodyStart).trim();
    if (kind == '{')
      out.push_back({Piece::Output, body.str()});
    else if (kind == '%')
      out.push_back({Piece::Statement, body.str()});
    stripNext = endMark == '-';
    // trim_blocks: the newline after a block or comment goes.
    trimNewline = kind != '{' && endMark != '-' && endMark != '+';
    i = close + 2;
  }
  return out;
}

struct Node {
  enum Kind { Text, Output, For, If, Set } kind;
  std::string text;
  ExprPtr expr;
  /// For: loop variables; Set: target name (and attribute).
  std::string var, attr;
  std::vector<Node> body, elseBody;
  /// If: (condition, body) branches; a null condition is the else branch.
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches;
};

class TemplateParser {
public:
  explicit TemplateParser(std::vector<Piece> pieces)
      : pieces(std::move(pieces)) {}

  /// Parses nodes until a statement whose keyword is in `ends`; returns
  /// that keyword (or "" at the end of the template).
  Expected<std::string> parse(std::vector<Node> &out,
                              std::initializer_list<StringRef> ends,
                              std::string *endBody = nullptr) {
    while (pos < pieces.size()) {
      Piece &p = pieces[pos++];
      if (p.kind == Piece::Text) {
        out.push_back(Node{Node::Text, p.text});
        continue;
      }
      if (p.kind == Piece::Output) {
        Expected<ExprPtr> e = parseExpr(p.text);
        if (!e)
          return e.takeError();
        Node n{Node::Output};
        n.expr = *e;
        out.push_back(std::move(n));
        continue;
      }
      StringRef stmt = p.text;
      auto [keyword, rest] = stmt.split(' ');
      rest = rest.trim();
      if (llvm::is_contained(ends, keyword)) {
        if (endBody)
          *endBody = rest.str();
        return keyword.str();
      }
      if (keyword == "for") {
        auto [vars, iter] = rest.split(" in ");
        if (iter.empty())
          return fail("malformed '{% " + stmt + " %}'");
        Node n{Node::For};
        n.var = vars.trim().str();
        if (StringRef(n.var).contains(','))
          return fail("for-loops over several variables are not supported "
                      "('{% " +
                      stmt + " %}')");
        if (iter.contains(" if ") || iter.trim().ends_with(" recursive"))
          return fail("'{% " + stmt + " %}' is not supported");
        Expected<ExprPtr> e = parseExpr(iter);
        if (!e)
          return e.takeError();
        n.expr = *e;
        Expected<std::string> end = parse(n.body, {"endfor", "else"});
        if (!end)
          return end;
        if (*end == "else") {
          end = parse(n.elseBody, {"endfor"});
          if (!end)
            return end;
        }
        if (*end != "endfor")
          return fail("'{% for %}' without '{% endfor %}'");
        out.push_back(std::move(n));
        continue;
      }
      if (keyword == "if") {
        Node n{Node::If};
        std::string cond = rest.str();
        while (true) {
          Expected<ExprPtr> e = parseExpr(cond);
          if (!e)
            return e.takeError();
          std::vector<Node> body;
          std::string next;
          Expected<std::string> end =
              parse(body, {"elif", "else", "endif"}, &next);
          if (!end)
            return end;
          n.branches.emplace_back(*e, std::move(body));
          if (*end == "elif") {
            cond = next;
            continue;
          }
          if (*end == "else") {
            std::vector<Node> body;
            end = parse(body, {"endif"});
            if (!end)
              return end;
            n.branches.emplace_back(nullptr, std::move(body));
          }
          if (*end != "endif")
            return fail("'{% if %}' without '{% endif %}'");
          break;
        }
        out.push_back(std::move(n));
        continue;
      }
      if (keyword == "set") {
        auto [target, value] = rest.split('=');
        if (value.empty())
          return fail("'{% " + stmt + " %}' is not supported (block set)");
        Node n{Node::Set};
        auto [name, attr] = target.trim().split('.');
        n.var = name.str();
        n.attr = attr.str();
        Expected<ExprPtr> e = parseExpr(value);
        if (!e)
          return e.takeError();
        n.expr = *e;
        out.push_back(std::move(n));
        continue;
      }
      return fail("'{% " + keyword + " %}' is not supported");
    }
    if (ends.size())
      return std::string();
    return std::string();
  }

private:
  std::vector<Piece> pieces;
  size_t pos = 0;
};

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

class Renderer {
public:
  std::vector<Dict> scopes;
  std::string out;

  Value lookup(const std::string &name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end())
        return f->second;
    }
    return Value{};
  }

  Expected<Value> eval(const Expr &e);
  Error render(const std::vector<Node> &nodes);
};

Expected<int64_t> asIndex(const Value &v, StringRef what) {
  if (v.kind != Value::Int)
    return fail(what + " is not an integer");
  return v.i;
}

Expected<Value> callMethod(const Value &self, StringRef name,
                           const std::vector<Value> &args) {
  if (self.kind == Value::Str) {
    StringRef s = self.s;
    auto chars = [&]() -> std::string {
      return args.empty() ? std::string(" \t\n\r\f\v") : args[0].s;
    };
    if (name == "strip")
      return Value::str(s.trim(chars()).str());
    if (name == "lstrip")
      return Value::str(s.ltrim(chars()).str());
    if (name == "rstrip")
      return Value::str(s.rtrim(chars()).str());
    if (name == "upper")
      return Value::str(s.upper());
    if (name == "lower")
      return Value::str(s.lower());
    if (name == "startswith" && args.size() == 1)
      return Value::boolean(s.starts_with(args[0].s));
    if (name == "endswith" && args.size() == 1)
      return Value::boolean(s.ends_with(args[0].s));
  }
  return fail("method '" + name + "' is not supported");
}

Expected<Value> Renderer::eval(const Expr &e) {
  switch (e.kind) {
  case Expr::Literal:
    return e.value;
  case Expr::Var:
    return lookup(e.name);
  case Expr::ListLit: {
    List l;
    for (const ExprPtr &a : e.args) {
      Expected<Value> v = eval(*a);
      if (!v)
        return v;
      l.push_back(*v);
    }
    return Value::makeList(std::move(l));
  }
  case Expr::Attr:
  case Expr::Index: {
    Expected<Value> obj = eval(*e.a);
    if (!obj)
      return obj;
    Value key;
    if (e.kind == Expr::Attr) {
      key = Value::str(e.name);
    } else {
      Expected<Value> k = eval(*e.b);
      if (!k)
        return k;
      key = *k;
    }
    if (obj->kind == Value::DictK) {
      if (key.kind != Value::Str)
        return Value{};
      auto it = obj->dict->find(key.s);
      return it == obj->dict->end() ? Value{} : it->second;
    }
    if ((obj->kind == Value::ListK || obj->kind == Value::Str) &&
        key.kind == Value::Int) {
      int64_t n = obj->kind == Value::ListK ? obj->list->size() : obj->s.size();
      int64_t i = key.i < 0 ? key.i + n : key.i;
      if (i < 0 || i >= n)
        return Value{};
      if (obj->kind == Value::ListK)
        return (*obj->list)[i];
      return Value::str(obj->s.substr(i, 1));
    }
    return Value{};
  }
  case Expr::Slice: {
    Expected<Value> obj = eval(*e.a);
    if (!obj)
      return obj;
    if (obj->kind != Value::ListK && obj->kind != Value::Str)
      return fail("slicing a value that is not a list or a string");
    int64_t n = obj->kind == Value::ListK ? obj->list->size() : obj->s.size();
    int64_t lo = 0, hi = n;
    for (auto [ptr, dst] :
         {std::make_pair(e.b.get(), &lo), std::make_pair(e.c.get(), &hi)}) {
      if (!ptr)
        continue;
      Expected<Value> v = eval(*ptr);
      if (!v)
        return v;
      Expected<int64_t> idx = asIndex(*v, "a slice bound");
      if (!idx)
        return idx.takeError();
      *dst = *idx < 0 ? std::max<int64_t>(0, *idx + n) : std::min(*idx, n);
    }
    if (obj->kind == Value::Str)
      return Value::str(hi > lo ? obj->s.substr(lo, hi - lo) : "");
    List l;
    for (int64_t i = lo; i < hi; ++i)
      l.push_back((*obj->list)[i]);
    return Value::makeList(std::move(l));
  }
  case Expr::Call: {
    std::vector<Value> args;
    for (const ExprPtr &a : e.args) {
      Expected<Value> v = eval(*a);
      if (!v)
        return v;
      args.push_back(*v);
    }
    if (e.a->kind == Expr::Var) {
      if (e.a->name == "raise_exception")
        return fail("raise_exception: " +
                    (args.empty() ? std::string() : args[0].toString()));
      if (e.a->name == "namespace") {
        Dict d;
        for (auto &[k, v] : e.kwargs) {
          Expected<Value> x = eval(*v);
          if (!x)
            return x;
          d[k] = *x;
        }
        return Value::makeDict(std::move(d));
      }
      return fail("function '" + e.a->name + "' is not supported");
    }
    if (e.a->kind == Expr::Attr) {
      Expected<Value> self = eval(*e.a->a);
      if (!self)
        return self;
      return callMethod(*self, e.a->name, args);
    }
    return fail("calling this expression is not supported");
  }
  case Expr::Filter: {
    Expected<Value> v = eval(*e.a);
    if (!v)
      return v;
    if (e.name == "trim")
      return Value::str(StringRef(v->toString()).trim().str());
    if (e.name == "upper")
      return Value::str(StringRef(v->toString()).upper());
    if (e.name == "lower")
      return Value::str(StringRef(v->toString()).lower());
    if (e.name == "string")
      return Value::str(v->toString());
    if (e.name == "length" || e.name == "count") {
      if (v->kind == Value::ListK)
        return Value::integer(v->list->size());
      if (v->kind == Value::Str)
        return Value::integer(v->s.size());
      if (v->kind == Value::DictK)
        return Value::integer(v->dict->size());
      return fail("filter 'length' of a value without a length");
    }
    if (e.name == "tojson" && v->kind == Value::Str) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << llvm::json::Value(v->s);
      return Value::str(s);
    }
    return fail("filter '" + e.name + "' is not supported");
  }
  case Expr::Test: {
    Expected<Value> v = eval(*e.a);
    if (!v)
      return v;
    bool r;
    if (e.name == "defined")
      r = v->kind != Value::Undefined;
    else if (e.name == "undefined")
      r = v->kind == Value::Undefined;
    else if (e.name == "none")
      r = v->kind == Value::None;
    else if (e.name == "string")
      r = v->kind == Value::Str;
    else
      return fail("test 'is " + e.name + "' is not supported");
    return Value::boolean(r != e.negated);
  }
  case Expr::Unary: {
    Expected<Value> v = eval(*e.a);
    if (!v)
      return v;
    if (e.name == "not")
      return Value::boolean(!v->truthy());
    if (v->kind != Value::Int)
      return fail("unary '-' of a value that is not an integer");
    return Value::integer(-v->i);
  }
  case Expr::Cond: {
    Expected<Value> c = eval(*e.b);
    if (!c)
      return c;
    if (c->truthy())
      return eval(*e.a);
    return e.c ? eval(*e.c) : Value{};
  }
  case Expr::Binary: {
    Expected<Value> l = eval(*e.a);
    if (!l)
      return l;
    if (e.name == "and" && !l->truthy())
      return l;
    if (e.name == "or" && l->truthy())
      return l;
    Expected<Value> r = eval(*e.b);
    if (!r)
      return r;
    StringRef op = e.name;
    if (op == "and" || op == "or")
      return r;
    if (op == "==")
      return Value::boolean(l->equals(*r));
    if (op == "!=")
      return Value::boolean(!l->equals(*r));
    if (op == "~")
      return Value::str(l->toString() + r->toString());
    if (op == "in" || op == "not in") {
      bool found = false;
      if (r->kind == Value::Str)
        found = StringRef(r->s).contains(l->toString());
      else if (r->kind == Value::ListK)
        found = llvm::any_of(*r->list,
                             [&](const Value &x) { return x.equals(*l); });
      else if (r->kind == Value::DictK)
        found = r->dict->count(l->toString());
      else
        return fail("'in' over a value that is not a string, list or dict");
      return Value::boolean(found != (op == "not in"));
    }
    if (op == "+" && l->kind == Value::Str && r->kind == Value::Str)
      return Value::str(l->s + r->s);
    if (op == "+" && l->kind == Value::ListK && r->kind == Value::ListK) {
      List all = *l->list;
      all.insert(all.end(), r->list->begin(), r->list->end());
      return Value::makeList(std::move(all));
    }
    if (l->kind == Value::Int && r->kind == Value::Int) {
      int64_t a = l->i, b = r->i;
      if (op == "+")
        return Value::integer(a + b);
      if (op == "-")
        return Value::integer(a - b);
      if (op == "*")
        return Value::integer(a * b);
      if ((op == "%" || op == "/") && b == 0)
        return fail("division by zero");
      if (op == "%")
        return Value::integer(((a % b) + b) % b);
      if (op == "<")
        return Value::boolean(a < b);
      if (op == ">")
        return Value::boolean(a > b);
      if (op == "<=")
        return Value::boolean(a <= b);
      if (op == ">=")
        return Value::boolean(a >= b);
      if (op == "/")
        return fail("'/' (true division) is not supported");
    }
    if (l->kind == Value::Str && r->kind == Value::Str &&
        (op == "<" || op == ">" || op == "<=" || op == ">=")) {
      int c = l->s.compare(r->s);
      return Value::boolean(op == "<"    ? c < 0
                            : op == ">"  ? c > 0
                            : op == "<=" ? c <= 0
                                         : c >= 0);
    }
    return fail("operator '" + op + "' on these operands is not supported");
  }
  }
  return Value{};
}

Error Renderer::render(const std::vector<Node> &nodes) {
  for (const Node &n : nodes) {
    switch (n.kind) {
    case Node::Text:
      out += n.text;
      break;
    case Node::Output: {
      Expected<Value> v = eval(*n.expr);
      if (!v)
        return v.takeError();
      if (v->kind == Value::ListK || v->kind == Value::DictK)
        return fail("printing a list or a dict is not supported");
      out += v->toString();
      break;
    }
    case Node::Set: {
      Expected<Value> v = eval(*n.expr);
      if (!v)
        return v.takeError();
      if (n.attr.empty()) {
        scopes.back()[n.var] = *v;
        break;
      }
      Value ns = lookup(n.var);
      if (ns.kind != Value::DictK)
        return fail("'{% set " + n.var + "." + n.attr +
                    " %}' on something that is not a namespace");
      (*ns.dict)[n.attr] = *v;
      break;
    }
    case Node::If:
      for (const auto &[cond, body] : n.branches) {
        bool take = true;
        if (cond) {
          Expected<Value> v = eval(*cond);
          if (!v)
            return v.takeError();
          take = v->truthy();
        }
        if (take) {
          if (Error err = render(body))
            return err;
          break;
        }
      }
      break;
    case Node::For: {
      Expected<Value> v = eval(*n.expr);
      if (!v)
        return v.takeError();
      List items;
      if (v->kind == Value::ListK)
        items = *v->list;
      else if (v->kind == Value::DictK)
        for (auto &kv : *v->dict)
          items.push_back(Value::str(kv.first));
      else if (v->kind != Value::Undefined && v->kind != Value::None)
        return fail("for-loop over a value that is not a list");
      if (items.empty()) {
        if (Error err = render(n.elseBody))
          return err;
        break;
      }
      for (size_t i = 0; i < items.size(); ++i) {
        Dict loop;
        int64_t len = items.size();
        loop["index0"] = Value::integer(i);
        loop["index"] = Value::integer(i + 1);
        loop["revindex"] = Value::integer(len - i);
        loop["revindex0"] = Value::integer(len - i - 1);
        loop["first"] = Value::boolean(i == 0);
        loop["last"] = Value::boolean(i + 1 == items.size());
        loop["length"] = Value::integer(len);
        scopes.push_back(Dict());
        scopes.back()["loop"] = Value::makeDict(std::move(loop));
        scopes.back()[n.var] = items[i];
        Error err = render(n.body);
        scopes.pop_back();
        if (err)
          return err;
      }
      break;
    }
    }
  }
  return Error::success();
}

} // namespace

Expected<std::string> rlx::renderChatTemplate(StringRef source,
                                              const ChatTemplateInputs &in) {
  Expected<std::vector<Piece>> pieces = lexTemplate(source);
  if (!pieces)
    return pieces.takeError();
  TemplateParser parser(std::move(*pieces));
  std::vector<Node> nodes;
  Expected<std::string> end = parser.parse(nodes, {});
  if (!end)
    return end.takeError();
  Renderer r;
  r.scopes.emplace_back();
  List messages;
  for (const ChatMessage &m : in.messages)
    messages.push_back(Value::makeDict(
        {{"role", Value::str(m.role)}, {"content", Value::str(m.content)}}));
  Dict &globals = r.scopes.back();
  globals["messages"] = Value::makeList(std::move(messages));
  globals["add_generation_prompt"] = Value::boolean(in.addGenerationPrompt);
  globals["bos_token"] = Value::str(in.bosToken);
  globals["eos_token"] = Value::str(in.eosToken);
  // transformers passes these (None without tools or documents).
  globals["tools"] = Value::none();
  globals["documents"] = Value::none();
  r.scopes.emplace_back();
  if (Error err = r.render(nodes))
    return std::move(err);
  return r.out;
}
