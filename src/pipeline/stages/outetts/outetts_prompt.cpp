#include "pipeline/stages/outetts/outetts_prompt.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace edge::pipeline {

namespace {

const char* const kOnes[] = {"zero",    "one",     "two",       "three",    "four",
                             "five",    "six",     "seven",     "eight",    "nine",
                             "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                             "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kTens[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy",
                             "eighty", "ninety"};

// 1..999 as words.
std::string below_thousand(int n) {
  std::string out;
  auto add = [&out](const std::string& w) { out += (out.empty() ? "" : " ") + w; };
  if (n >= 100) add(std::string(kOnes[n / 100]) + " hundred"), n %= 100;
  if (n >= 20) add(kTens[n / 10]), n %= 10;
  if (n > 0) add(kOnes[n]);
  return out;
}

// An integer of any length: groups of three digits with their scale; longer than the
// scales go digit by digit.
std::string integer_words(const std::string& digits) {
  size_t i = 0;
  while (i + 1 < digits.size() && digits[i] == '0') ++i;
  const std::string d = digits.substr(i);
  static const char* const kScales[] = {"", "thousand", "million", "billion", "trillion"};
  if (d.size() > 15) {
    std::string out;
    for (char c : d) out += (out.empty() ? "" : " ") + std::string(kOnes[c - '0']);
    return out;
  }
  if (d == "0") return "zero";
  std::string out;
  const size_t groups = (d.size() + 2) / 3;
  size_t pos = 0;
  for (size_t g = groups; g-- > 0;) {
    const size_t len = d.size() - pos - g * 3;
    const int v = std::atoi(d.substr(pos, len).c_str());
    pos += len;
    if (v == 0) continue;
    out += (out.empty() ? "" : " ") + below_thousand(v);
    if (g > 0) out += std::string(" ") + kScales[g];
  }
  return out;
}

}  // namespace

std::string number_to_words(const std::string& number) {
  const size_t dot = number.find('.');
  std::string out = integer_words(number.substr(0, dot));
  if (dot != std::string::npos && dot + 1 < number.size()) {
    out += " point";
    for (size_t i = dot + 1; i < number.size(); ++i) out += std::string(" ") + kOnes[number[i] - '0'];
  }
  return out;
}

std::vector<std::string> normalize_tts_text(const std::string& text) {
  std::string spelled;  // numbers (digits with at most one inner '.') as words
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      spelled += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j + 1 < text.size() && text[j] == '.' && std::isdigit(static_cast<unsigned char>(text[j + 1]))) {
      ++j;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    }
    spelled += " " + number_to_words(text.substr(i, j - i)) + " ";
    i = j;
  }
  std::vector<std::string> words;
  std::string word;
  for (char ch : spelled) {
    const unsigned char c = static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(ch)));
    if (c >= 'a' && c <= 'z') {
      word += static_cast<char>(c);
    } else if (std::isspace(c) || c == '-' || c == '_' || c == '/' || c == ',' || c == '.' || c == '\\') {
      if (!word.empty()) words.push_back(std::move(word)), word.clear();
    }  // anything else (apostrophes, other punctuation, non-ASCII) is dropped inside a word
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

Expected<Speaker> parse_speaker_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    Speaker s;
    for (const auto& w : j.at("words")) {
      SpeakerWord sw;
      sw.word = w.at("word").get<std::string>();
      sw.duration = w.at("duration").get<double>();
      sw.codes = w.at("codes").get<std::vector<int32_t>>();
      if (sw.duration < 0 || sw.codes.empty())
        return Status::invalid_argument(fmt::format("speaker word '{}': no codes or a negative duration", sw.word));
      s.words.push_back(std::move(sw));
    }
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid_argument(std::string("speaker profile: ") + e.what());
  }
}

Expected<OuteTtsVocab> find_outetts_vocab(const Tokenizer& tok) {
  const Vocab& v = tok.vocab();
  OuteTtsVocab o;
  o.version = tok.chat_template() == "outetts-0.3" ? OuteTtsVersion::kV0_3 : OuteTtsVersion::kV0_2;
  auto need = [&v](const char* name, int32_t& id) -> Status {
    id = v.find(name);
    if (id < 0) return Status::invalid_argument(fmt::format("not an OuteTTS vocabulary: no {} token", name));
    return Status();
  };
  for (const char* name : {"<|im_start|>", "<|text_start|>", "<|text_end|>", "<|audio_start|>"}) {
    int32_t id = -1;
    RETURN_IF_ERROR(need(name, id));
  }
  RETURN_IF_ERROR(need("<|audio_end|>", o.audio_end));
  RETURN_IF_ERROR(need("<|0|>", o.code0));
  if (o.version == OuteTtsVersion::kV0_2) {
    RETURN_IF_ERROR(need("<|code_start|>", o.code_start));
    RETURN_IF_ERROR(need("<|code_end|>", o.code_end));
    RETURN_IF_ERROR(need("<|text_sep|>", o.space));
  } else {
    RETURN_IF_ERROR(need("<|space|>", o.space));
    o.code_end = o.space;
  }
  while (v.find(fmt::format("<|{}|>", o.n_codes)) == o.code0 + o.n_codes) ++o.n_codes;
  for (int32_t id = 0; id < v.n_tokens(); ++id) {
    const std::string& t = v.tokens[id];
    if (t.size() > 6 && t.compare(0, 4, "<|t_") == 0 && t.compare(t.size() - 2, 2, "|>") == 0)
      o.times.emplace_back(id, std::atof(t.substr(4, t.size() - 6).c_str()));
  }
  if (o.times.empty())
    return Status::invalid_argument("not an OuteTTS vocabulary: no <|t_D.DD|> duration tokens");
  return o;
}

std::string outetts_prompt(OuteTtsVersion v, const std::vector<std::string>& words,
                           const Speaker* speaker) {
  const bool v3 = v == OuteTtsVersion::kV0_3;
  const std::string sep = v3 ? "<|space|>" : "<|text_sep|>";
  std::string p = "<|im_start|>\n<|text_start|>";
  if (speaker)
    for (const SpeakerWord& w : speaker->words) p += w.word + sep;
  for (size_t i = 0; i < words.size(); ++i) p += (i ? sep : "") + words[i];
  p += "<|text_end|>\n<|audio_start|>\n";
  if (!speaker) return p;
  for (const SpeakerWord& w : speaker->words) {
    p += fmt::format("{}<|t_{:.2f}|>{}", w.word, w.duration, v3 ? "" : "<|code_start|>");
    for (int32_t c : w.codes) p += fmt::format("<|{}|>", c);
    p += (v3 ? "<|space|>" : "<|code_end|>") + std::string("\n");
  }
  return p;
}

}  // namespace edge::pipeline
