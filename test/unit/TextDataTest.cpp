// The text data source: reading a folder of text, byte and character tokens, the sequences a
// language model trains on, the held-out split, and batches of them.
#include "runtime/train/data/Loader.h"
#include "runtime/train/data/Sources.h"
#include "runtime/train/data/Text.h"

#include "TempDir.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace dtnn {
namespace {

using testing::writeFile;

class TextDataTest : public testing::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    ASSERT_FALSE(registerBuiltinDataSources());
  }
  // The text source on this folder with sequences of seqLen.
  Expected<DataSplits> load(int64_t seqLen, const std::string &level = "byte",
                            double heldOut = 0.05) {
    DataSpec spec{"text", {}};
    spec.args.set("dir", dir_.string());
    spec.args.set("seq_len", seqLen);
    spec.args.set("level", level);
    spec.args.set("held_out", heldOut);
    return loadData(spec, "", 1);
  }
  std::string loadError(int64_t seqLen, const std::string &level = "byte") {
    auto s = load(seqLen, level);
    return s ? "" : s.error().message();
  }
};

TEST_F(TextDataTest, ReadsTheTextFilesOfAFolderInNameOrder) {
  writeFile(path("b"), "second\n");
  writeFile(path("a"), "first\n");
  writeFile(path("a.dat"), std::string("\0\0\0\2index", 9)); // a strfile index: not text
  writeFile(path(".hidden"), "hidden\n");
  std::filesystem::create_directory(dir_ / "sub");
  writeFile(path("sub/c"), "nested\n");
  std::filesystem::create_symlink("a", dir_ / "a.u8");
  std::vector<std::string> files;
  auto text = readTextCorpus(dir_.string(), files);
  ASSERT_TRUE(text) << text.error().message();
  EXPECT_EQ(*text, "first\nsecond\n");
  EXPECT_EQ(files, (std::vector<std::string>{"a", "b"}));
  // One file is read as it is.
  text = readTextCorpus(path("b"), files);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "second\n");
}

TEST_F(TextDataTest, BytesAndCharactersRoundTrip) {
  // ASCII, two-, three- and four-byte UTF-8, and two bytes that are not UTF-8 (a lone
  // continuation byte and a truncated sequence).
  std::string text = "ab\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x80z\xE2\x82";
  Vocabulary bytes = makeVocabulary(text, false);
  auto b = tokenize(text, bytes);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->size(), text.size());
  EXPECT_EQ((*b)[2], 0xC3);
  EXPECT_EQ(detokenize(*b, bytes), text);

  Vocabulary chars = makeVocabulary(text, true);
  // a b z, U+00E9, U+20AC, the escapes of 0x80, 0x82 and 0xE2 (0xDC80 + b), then U+1F600.
  EXPECT_EQ(chars.chars, (std::vector<uint32_t>{'a', 'b', 'z', 0xE9, 0x20AC, 0xDD00, 0xDD02,
                                                0xDD62, 0x1F600}));
  std::vector<uint8_t> lengths;
  auto c = tokenize(text, chars, &lengths);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (std::vector<int32_t>{0, 1, 3, 4, 8, 5, 2, 7, 6}));
  EXPECT_EQ(lengths, (std::vector<uint8_t>{1, 1, 2, 3, 4, 1, 1, 1, 1}));
  EXPECT_EQ(detokenize(*c, chars), text);
  // A character the vocabulary lacks is named.
  auto missing = tokenize("a\xC3\xB1", chars);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "the character '\xC3\xB1' (U+00F1) at byte 1 is not in "
                                       "the vocabulary of the 9 characters of the data set");
}

TEST_F(TextDataTest, SequencesPredictTheNextToken) {
  std::vector<int32_t> tokens = {10, 11, 12, 13, 14, 15, 16, 17};
  std::vector<uint8_t> lengths(tokens.size(), 1);
  lengths[7] = 3;
  // 7 labels in sequences of 3: two whole ones, and a padded third when `pad`.
  Dataset whole = makeSequences(tokens, lengths, 3, false, {}, -100);
  EXPECT_EQ(whole.count, 2);
  EXPECT_EQ(whole.tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(whole.labels, (std::vector<int32_t>{11, 12, 13, 14, 15, 16}));
  EXPECT_EQ(whole.bytesPerLabel, 1.0);
  Dataset padded = makeSequences(tokens, lengths, 3, true, {}, -7);
  EXPECT_EQ(padded.count, 3);
  EXPECT_EQ(padded.sampleShape, std::vector<int64_t>{3});
  EXPECT_EQ(padded.labelsPerSample, 3);
  EXPECT_EQ(padded.tokens, (std::vector<int32_t>{10, 11, 12, 13, 14, 15, 16, 0, 0}));
  EXPECT_EQ(padded.labels, (std::vector<int32_t>{11, 12, 13, 14, 15, 16, 17, -7, -7}));
  EXPECT_DOUBLE_EQ(padded.bytesPerLabel, 9.0 / 7.0); // six 1-byte labels and one of 3
  EXPECT_EQ(padded.numClasses, 256);
  EXPECT_TRUE(padded.tokenSamples);
}

TEST_F(TextDataTest, HoldsOutTheLastBytes) {
  // 100 bytes of a..z repeated: the last 5 (rstuv) are held out, as bench/char_trigram.py
  // splits them.
  std::string text;
  for (int i = 0; i < 100; ++i) text += char('a' + i % 26);
  writeFile(path("corpus.txt"), text);
  auto s = load(4);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->train.count, 94 / 4); // 95 bytes: 94 labels, whole sequences only
  EXPECT_EQ(s->test.count, 1);       // 5 bytes: 4 labels
  EXPECT_EQ(s->test.tokens, (std::vector<int32_t>{'r', 's', 't', 'u'}));
  EXPECT_EQ(s->test.labels, (std::vector<int32_t>{'s', 't', 'u', 'v'}));
  EXPECT_EQ(s->description, "text: 23 train, 1 held-out sequences of 4 bytes, from 1 file (100 "
                            "bytes) of " + dir_.string() + ", the last 5 bytes held out");
  auto c = load(4, "char");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->train.numClasses, 26);
  EXPECT_EQ(c->test.labels, (std::vector<int32_t>{18, 19, 20, 21}));
}

TEST_F(TextDataTest, Errors) {
  EXPECT_EQ(loadError(4), "text: " + dir_.string() +
                              " holds no text files (regular files without NUL bytes); install "
                              "the Debian package fortunes, or pass --data naming a folder of "
                              "text files or one file");
  writeFile(path("short"), std::string(30, 'x'));
  EXPECT_EQ(loadError(4, "word"), "text: 'level' must be \"byte\" or \"char\", got \"word\"");
  auto all = load(4, "byte", 1.0);
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().message(), "text: 'held_out' must be a fraction in (0, 1), got 1.0");
  EXPECT_EQ(loadError(0), "text: 'seq_len' must be positive, got 0 (a model taking i32[N, T] "
                          "sets it to T)");
  // 30 bytes hold out 1, which is no sequence of 4 and its next token.
  EXPECT_EQ(loadError(4), "text: the held-out split of " + dir_.string() +
                              " has 1 token, too few for one sequence of 4 and its next token");
  DataSpec spec{"text", {}};
  spec.args.set("seq_len", int64_t{4});
  auto missing = loadData(spec, "/nonexistent/texts", 1);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(),
            "text: /nonexistent/texts does not exist; install the Debian package fortunes, or "
            "pass --data naming a folder of text files or one file");
}

TEST_F(TextDataTest, BatchesCarryTokensAndCountTheirLabels) {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7};
  Dataset d = makeSequences(tokens, std::vector<uint8_t>(7, 1), 4, true, {}, -100);
  ASSERT_EQ(d.count, 2); // [1 2 3 4] -> [2 3 4 5], [5 6 0 0] -> [6 7 pad pad]
  LoaderOptions opts;
  opts.batch = 2;
  opts.shuffle = false;
  opts.prefetch = false;
  BatchLoader loader(d, {}, opts);
  Batch b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_TRUE(b.tokenInputs);
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 0, 0}));
  EXPECT_EQ(b.labels, (std::vector<int32_t>{2, 3, 4, 5, 6, 7, -100, -100}));
  EXPECT_EQ(b.counted, 6);
  EXPECT_EQ(b.sampleBytes(), 4 * sizeof(int32_t));
  EXPECT_EQ(b.input(), static_cast<const void *>(b.tokens.data()));
  // Two ranks: each its sequence, with its own count.
  opts.ranks = 2;
  opts.rank = 1;
  BatchLoader second(d, {}, opts);
  ASSERT_TRUE(second.next(b));
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{5, 6, 0, 0}));
  EXPECT_EQ(b.counted, 2);
}

} // namespace
} // namespace dtnn
