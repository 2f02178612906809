#include "tests/tokenizer/text_corpus.h"

#include <random>

namespace ferry::tokenizer::testing {

const std::vector<std::string>& corpus_fragments() {
  static const std::vector<std::string> fragments = {
      // code
      "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
      "#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() == 3 ? 0 : 1;\n}\n",
      "const f = async (x) => { await x?.y ?? null; }; // TODO: fix\r\n",
      "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
      "    \t\tif (a&&b||!c) {x+=1;}    ",
      "fn main() -> Result<(), Box<dyn Error>> { println!(\"{:?}\", 0x1F_u8); Ok(()) }",
      "<div class=\"x\">&nbsp;Hello&amp;bye</div>\n\n\n",
      "$ ls -la /usr/lib | grep -E '^d' >> out.txt 2>&1",
      // maths
      "∑_{i=1}^{n} x_i² = 3.14159265358979 × 10⁻³",
      "\\frac{\\partial L}{\\partial \\theta} = \\nabla_\\theta \\mathcal{L}(x; θ) ≈ 0",
      "1234567890 + 987654321 = 2222222211; -0.5e-10, 1,000,000.00",
      "∀ε>0 ∃δ>0: |x−a|<δ ⇒ |f(x)−f(a)|<ε",
      // CJK
      "我们今天学习分词器。机器学习是人工智能的一个分支！",
      "日本語のテキスト、カタカナとひらがな。東京タワー",
      "한국어 문장입니다. 안녕하세요!",
      "中文，标点；“引号”（括号）——破折号……",
      // emoji
      "I ❤️ emoji 😀🎉👍🏽 and families 👨‍👩‍👧‍👦 and flags 🇯🇵🇫🇷!",
      "🤖🤖🤖 robots👩🏻‍💻 coding at 3am☕",
      // combining marks: composed and decomposed (NFC changes the latter)
      "café naïve résumé",
      "cafe\xCC\x81 nai\xCC\x88ve re\xCC\x81sume\xCC\x81",
      "A\xCC\x8A ångström, Z\xCC\xB8\xCC\x88\xCC\x83" "a\xCC\xB7\xCC\x90lgo",
      "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB\xE1\x84\x80\xE1\x85\xB3\xE1\x86\xAF",  // Hangul jamo → 한글 under NFC
      "Tiếng Việt có dấu: người, được, những",
      "हिन्दी भाषा में लिखा गया वाक्य।",
      "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
      "اَلْعَرَبِيَّةُ لُغَةٌ جَمِيلَةٌ",
      "עִבְרִית עם ניקוד",
      "e\xCC\x81\xCC\x81\xCC\x81 o\xCC\x82\xCC\x83 x\xCD\x9C",
      // whitespace and newlines
      "a  b   c    d\t\te\n\nf\n\n\ng",
      "\r\n\r\n  \r\n\t\n",
      "                                        ",
      "line\u00A0with\u00A0nbsp\u3000and\u3000ideographic\u2028sep",
      "vertical\x0Btab and next\xC2\x85line and\xE2\x80\x89thin",
      "odd spaces: b \x0B" "c \xC2\x85" "d a \x0B\x0B b\x0B\n c \xC2\x85\xC2\x85 \n\x0B  d",
      "\n",
      " ",
      "trailing spaces   \n   leading",
      // contractions and case
      "I'm sure you'll see it's what they've said: we'd go. I'M SURE YOU'LL SEE IT'S",
      "don't DON'T Don'T o'clock rock'n'roll",
      // special and added tokens inside text
      "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
      "<think>\nreasoning here\n</think>\n\nanswer",
      "text<|endoftext|>more text<|endoftext|>",
      "almost special: <|im_start| and <|im_end and <think and </think",
      "<tool_call>{\"name\": \"f\"}</tool_call><|fim_prefix|>x<|fim_suffix|>",
      // misc
      "The quick brown fox jumps over the lazy dog.",
      "Ünïcödé ÀÉÎÕÜ ßẞ ﬁﬂ Ωmega ΣΑΣ ǅ",
      "URL: https://example.com/path?q=1&r=two#frag",
      "email@example.org, +1 (555) 123-4567",
      "!!!???...,,,;;;:::---___***",
      "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ １２３",
  };
  return fragments;
}

std::vector<std::string> make_text_corpus(int count, uint64_t seed) {
  const auto& fragments = corpus_fragments();
  static const std::vector<std::string> separators = {"", " ", "  ", "\n", "\n\n", "\t", "\r\n", ". ", "'s ", "'"};
  std::mt19937_64 rng(seed);
  std::vector<std::string> corpus(fragments.begin(), fragments.end());
  while (static_cast<int>(corpus.size()) < count) {
    std::string s;
    int parts = 1 + static_cast<int>(rng() % 5);
    for (int p = 0; p < parts; ++p) {
      const std::string& f = fragments[rng() % fragments.size()];
      // Sometimes only a slice of a fragment, cut at a character boundary.
      size_t begin = 0;
      size_t end = f.size();
      if (rng() % 3 == 0 && f.size() > 4) {
        begin = rng() % (f.size() / 2);
        end = begin + 1 + rng() % (f.size() - begin);
        while (begin > 0 && (static_cast<unsigned char>(f[begin]) & 0xC0) == 0x80) --begin;
        while (end < f.size() && (static_cast<unsigned char>(f[end]) & 0xC0) == 0x80) ++end;
      }
      s += f.substr(begin, end - begin);
      s += separators[rng() % separators.size()];
    }
    corpus.push_back(std::move(s));
  }
  return corpus;
}

}  // namespace ferry::tokenizer::testing
