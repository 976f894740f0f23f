#include "runtime/grammar/grammar_matcher.h"

#include <algorithm>

#include "core/check.h"

namespace edge::grammar {

namespace {

constexpr int kMaxDepth = 12000;  // expansion without consuming (a schema of 5000 optional properties nests 5000)
constexpr size_t kMaxLeaves = 4096;  // ways one text can continue; more are dropped

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

Matcher::Matcher(const Grammar& g) : g_(g) {
  initial_.begin = initial_.end = 0;
  seen_.clear();
  for (uint32_t start : g_.rules[g_.root]) {
    if (g_.elems[start].kind == Element::kEnd) {
      initial_.accept = true;
      continue;
    }
    expand(new_node(start, kNone), initial_, 0);
  }
  initial_.dist = initial_.accept ? 0 : initial_.dist;
}

uint32_t Matcher::new_node(uint32_t pos, uint32_t parent) {
  Node n;
  n.pos = pos;
  n.parent = parent;
  const Node* p = parent == kNone ? nullptr : &nodes_[parent];
  n.dist = g_.rest_len[pos] + (p ? p->dist : 0);
  n.hash = mix((static_cast<uint64_t>(pos) << 1) ^ (p ? p->hash : 0x5bd1e995u));
  nodes_.push_back(n);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

void Matcher::add_leaf(uint32_t node, State& out) {
  const uint64_t h = nodes_[node].hash;
  for (size_t i = out.begin; i < leaves_.size(); ++i)
    if (nodes_[leaves_[i]].hash == h) return;  // the same stack by another way
  if (leaves_.size() - out.begin >= kMaxLeaves) return;
  if (out.begin == out.end && !out.accept) out.dist = nodes_[node].dist;
  out.dist = std::min(out.dist, nodes_[node].dist);
  leaves_.push_back(node);
  out.end = static_cast<uint32_t>(leaves_.size());
}

void Matcher::expand(uint32_t node, State& out, int depth) {
  if (depth > kMaxDepth) return;
  const uint32_t pos = nodes_[node].pos;
  const Element e = g_.elems[pos];
  if (e.kind == Element::kSet) return add_leaf(node, out);
  CHECK(e.kind == Element::kRef);
  // Where to go once the rule is matched: a tail call goes straight to the parent.
  const uint32_t parent = nodes_[node].parent;
  const uint32_t cont =
      g_.elems[pos + 1].kind == Element::kEnd ? parent : new_node(pos + 1, parent);
  for (uint32_t start : g_.rules[e.arg]) {
    if (g_.elems[start].kind == Element::kEnd) {  // the empty alternative
      if (cont == kNone)
        out.accept = true, out.dist = 0;
      else
        expand(cont, out, depth + 1);
      continue;
    }
    expand(new_node(start, cont), out, depth + 1);
  }
}

void Matcher::follow(uint32_t pos, uint32_t parent, State& out, int depth) {
  if (g_.elems[pos].kind != Element::kEnd) return expand(new_node(pos, parent), out, depth);
  if (parent == kNone) {
    out.accept = true, out.dist = 0;
    return;
  }
  expand(parent, out, depth);
}

Matcher::State Matcher::step_code_point(const State& s, uint32_t cp) {
  State out;
  out.begin = out.end = static_cast<uint32_t>(leaves_.size());
  for (uint32_t i = s.begin; i < s.end; ++i) {
    const uint32_t leaf = leaves_[i];
    const Node n = nodes_[leaf];
    if (!g_.sets[g_.elems[n.pos].arg].contains(cp)) continue;
    follow(n.pos + 1, n.parent, out, 0);
  }
  if (out.accept) out.dist = 0;
  return out;
}

bool Matcher::viable(const State& s, uint32_t lo, uint32_t hi) const {
  for (uint32_t i = s.begin; i < s.end; ++i)
    if (g_.sets[g_.elems[nodes_[leaves_[i]].pos].arg].intersects(lo, hi)) return true;
  return false;
}

Matcher::State Matcher::advance(const State& s, uint8_t byte) {
  State dead;
  dead.begin = dead.end = static_cast<uint32_t>(leaves_.size());
  State t = s;
  t.accept = false;
  if (s.need == 0) {
    if (byte < 0x80) return step_code_point(s, byte);
    if ((byte >> 5) == 6) {
      t.need = 1;
    } else if ((byte >> 4) == 14) {
      t.need = 2;
    } else if ((byte >> 3) == 30) {
      t.need = 3;
    } else {
      return dead;  // a continuation byte or an invalid lead
    }
    t.width = static_cast<uint8_t>(t.need + 1);
    t.partial = byte & (0x7fu >> t.width);
  } else {
    if ((byte >> 6) != 2) return dead;
    t.partial = (s.partial << 6) | (byte & 0x3fu);
    if (--t.need == 0) {
      static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (t.partial < kMin[t.width] || t.partial > 0x10FFFF ||
          (t.partial >= 0xD800 && t.partial <= 0xDFFF))
        return dead;  // overlong, out of range, or a surrogate
      State from = s;
      from.need = 0;
      return step_code_point(from, t.partial);
    }
  }
  // The code points this sequence can still become: never an overlong form, a surrogate,
  // or past U+10FFFF.
  static constexpr uint32_t kLeast[5] = {0, 0, 0x80, 0x800, 0x10000};
  const int bits = 6 * t.need;
  const uint32_t lo = std::max(t.partial << bits, kLeast[t.width]);
  const uint32_t hi = std::min<uint32_t>(t.partial << bits | ((1u << bits) - 1), 0x10FFFF);
  if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF) || !viable(t, lo, hi))
    return dead;  // surrogates only
  return t;
}

uint64_t Matcher::signature(const State& s) const {
  std::vector<uint64_t> h;
  h.reserve(s.end - s.begin);
  for (uint32_t i = s.begin; i < s.end; ++i) h.push_back(nodes_[leaves_[i]].hash);
  std::sort(h.begin(), h.end());
  uint64_t sig = mix((static_cast<uint64_t>(s.partial) << 8) |
                     (static_cast<uint64_t>(s.need) << 4) | (s.accept ? 1u : 0u));
  for (uint64_t x : h) sig = mix(sig ^ x);
  return sig;
}

void Matcher::rewind(const Mark& m) {
  nodes_.resize(m.nodes);
  leaves_.resize(m.leaves);
}

void Matcher::compact(State& s) {
  std::vector<uint32_t> remap(nodes_.size(), kNone);
  std::vector<Node> kept;
  // Copies a chain bottom-up, so parents come before their children.
  auto keep = [&](auto&& self, uint32_t n) -> uint32_t {
    if (n == kNone) return kNone;
    if (remap[n] != kNone) return remap[n];
    Node copy = nodes_[n];
    copy.parent = self(self, copy.parent);
    kept.push_back(copy);
    return remap[n] = static_cast<uint32_t>(kept.size() - 1);
  };
  std::vector<uint32_t> leaves;
  for (uint32_t i = s.begin; i < s.end; ++i) leaves.push_back(keep(keep, leaves_[i]));
  nodes_ = std::move(kept);
  leaves_ = std::move(leaves);
  s.begin = 0;
  s.end = static_cast<uint32_t>(leaves_.size());
}

}  // namespace edge::grammar
