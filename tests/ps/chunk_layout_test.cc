// Chunking and placement: every byte of every tensor is in exactly one chunk, chunks are spread so
// bytes per server differ by at most one chunk, and per-tensor placement shows the hot spot.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "model/zoo.h"
#include "ps/chunk_layout.h"

namespace poseidon::ps {
namespace {

using model::Tensor;

// Tensors known by name and count alone, as the layout sees them.
std::vector<Tensor> counts(std::initializer_list<std::pair<const char*, uint64_t>> list) {
  std::vector<Tensor> tensors;
  for (const auto& [name, floats] : list) tensors.push_back({name, floats, {floats}});
  return tensors;
}

// Every byte of the packed model belongs to exactly one (tensor, offset), in order.
void expectCoversEverything(const ChunkLayout& layout, const std::vector<Tensor>& tensors) {
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> pieces_by_place;  // (chunk, offset) -> bytes
  for (size_t t = 0; t < tensors.size(); ++t) {
    uint64_t expected_offset = 0;
    for (const TensorPiece& piece : layout.piecesOf(t)) {
      ASSERT_EQ(piece.tensor_offset, expected_offset) << tensors[t].name;
      ASSERT_LT(piece.chunk, layout.chunks().size());
      ASSERT_LE(piece.chunk_offset + piece.bytes, layout.chunks()[piece.chunk].bytes) << tensors[t].name;
      pieces_by_place[{piece.chunk, piece.chunk_offset}] = piece.bytes;
      expected_offset += piece.bytes;
    }
    EXPECT_EQ(expected_offset, tensors[t].floats * 4) << tensors[t].name;
  }
  // Pieces tile the chunks without gaps or overlaps.
  uint32_t chunk = 0;
  uint64_t offset = 0;
  for (const auto& [place, bytes] : pieces_by_place) {
    if (place.first != chunk) {
      EXPECT_EQ(offset, layout.chunks()[chunk].bytes) << "chunk " << chunk << " not filled";
      EXPECT_EQ(place.first, chunk + 1);
      chunk = place.first;
      offset = 0;
    }
    EXPECT_EQ(place.second, offset) << "chunk " << chunk;
    offset += bytes;
  }
  EXPECT_EQ(offset, layout.chunks().back().bytes);
}

TEST(ChunkLayout, SmallTensorsShareAChunkAndLargeOnesSpanMany) {
  const std::vector<Tensor> tensors = counts({{"a", 10}, {"b", 20}, {"big", 3 * (1 << 18) + 5}, {"c", 1}});
  auto layout = ChunkLayout::build(tensors, 2, 1 << 20);
  ASSERT_TRUE(layout.isOk()) << layout.status().toString();
  EXPECT_EQ(layout->piecesOf(0).size(), 1u);
  EXPECT_EQ(layout->piecesOf(1).size(), 1u);
  EXPECT_EQ(layout->piecesOf(0)[0].chunk, layout->piecesOf(1)[0].chunk);
  EXPECT_EQ(layout->piecesOf(2).size(), 4u);  // 3 MiB + 20 B starting 120 B into chunk 0
  expectCoversEverything(*layout, tensors);
}

// Chunk starts: the named tensors open a fresh chunk (the one before is cut short), so no chunk
// holds two layers; model offsets stay packed and chunks still alternate over the servers.
TEST(ChunkLayout, ChunkStartsCutTheChunkBeforeThem) {
  const std::vector<Tensor> tensors = counts({{"a", 10}, {"b", 3}, {"c", 40}, {"d", 1}});
  const std::vector<size_t> starts = {1, 3};
  auto layout = ChunkLayout::build(tensors, 2, 64, starts);  // 16 floats per chunk
  ASSERT_TRUE(layout.isOk()) << layout.status().toString();
  expectCoversEverything(*layout, tensors);
  std::vector<std::pair<uint64_t, uint64_t>> chunks;  // (model offset, bytes)
  for (const Chunk& chunk : layout->chunks()) {
    EXPECT_EQ(chunk.server, static_cast<int>(chunk.id % 2));
    chunks.emplace_back(chunk.model_offset, chunk.bytes);
  }
  // a: [0, 40) alone; b + c: [40, 212) in 64-byte chunks; d: [212, 216) alone.
  const std::vector<std::pair<uint64_t, uint64_t>> expected = {{0, 40}, {40, 64}, {104, 64}, {168, 44}, {212, 4}};
  EXPECT_EQ(chunks, expected);
  EXPECT_EQ(layout->piecesOf(3).front().chunk, 4u);

  for (const std::vector<size_t>& bad :
       {std::vector<size_t>{4}, std::vector<size_t>{2, 1}, std::vector<size_t>{1, 1}}) {
    auto refused = ChunkLayout::build(tensors, 2, 64, bad);
    ASSERT_FALSE(refused.isOk());
    EXPECT_NE(refused.status().message().find("is not a tensor index in [0, 4) above the previous entry"),
              std::string::npos)
        << refused.status().toString();
  }
}

TEST(ChunkLayout, IsAPureFunctionOfTheModelAndServers) {
  const auto tensors = model::vgg19().tensors();
  auto a = ChunkLayout::build(tensors, 4);
  auto b = ChunkLayout::build(tensors, 4);
  ASSERT_TRUE(a.isOk() && b.isOk());
  ASSERT_EQ(a->chunks().size(), b->chunks().size());
  for (size_t i = 0; i < a->chunks().size(); ++i) EXPECT_EQ(a->chunks()[i].server, b->chunks()[i].server);
}

TEST(ChunkLayout, RefusesBadInputNamingIt) {
  const std::vector<Tensor> ok = counts({{"w", 4}});
  EXPECT_NE(ChunkLayout::build({}, 2).status().message().find("no tensors"), std::string::npos);
  EXPECT_NE(ChunkLayout::build(ok, 0).status().message().find("servers 0"), std::string::npos);
  EXPECT_NE(ChunkLayout::build(ok, 2, 6).status().message().find("chunk size 6"), std::string::npos);
  const std::vector<Tensor> empty = counts({{"w", 0}});
  EXPECT_NE(ChunkLayout::build(empty, 2).status().message().find("'w' has 0 floats"), std::string::npos);
  const std::vector<Tensor> twice = counts({{"w", 1}, {"w", 2}});
  EXPECT_NE(ChunkLayout::build(twice, 2).status().message().find("'w' appears twice"), std::string::npos);
}

struct BalanceCase {
  uint64_t classes;
  int servers;
};

void PrintTo(const BalanceCase& c, std::ostream* os) { *os << "VGG19-" << c.classes << " on " << c.servers; }

class Balance : public ::testing::TestWithParam<BalanceCase> {};

TEST_P(Balance, ChunksWithinOneChunkAndPerTensorIsAHotSpot) {
  const auto tensors = model::vgg19(GetParam().classes).tensors();
  auto layout = ChunkLayout::build(tensors, GetParam().servers);
  ASSERT_TRUE(layout.isOk());
  expectCoversEverything(*layout, tensors);
  const auto chunked = layout->bytesPerServer();
  const auto [min, max] = std::minmax_element(chunked.begin(), chunked.end());
  EXPECT_LE(*max - *min, kDefaultChunkBytes) << "bytes per server differ by more than one chunk";
  EXPECT_LE(imbalance(chunked), 1.03);
  const double per_tensor = imbalance(perTensorBytesPerServer(tensors, GetParam().servers));
  // The report the issue asks for: the hot spot chunking avoids.
  std::printf("VGG19-%s on %d servers: 2 MiB chunks max/min %.4f, per-tensor max/min %.2f\n",
              GetParam().classes == 1000 ? "1K" : "22K", GetParam().servers, imbalance(chunked), per_tensor);
  EXPECT_GE(per_tensor, imbalance(chunked));
  // With two servers VGG19-22K's two big FC layers (fc6 392 MiB, fc8 341 MiB) happen to balance
  // each other; from four servers on, fc6 alone is a hot spot of the whole job.
  if (GetParam().servers >= 4) {
    EXPECT_GT(per_tensor, 1.5) << "per-tensor placement should show the FC hot spot";
  }
}

INSTANTIATE_TEST_SUITE_P(Vgg19, Balance,
                         ::testing::Values(BalanceCase{1000, 2}, BalanceCase{1000, 4}, BalanceCase{1000, 8},
                                           BalanceCase{21841, 2}, BalanceCase{21841, 4}, BalanceCase{21841, 8}));

// A layout fits only the tensors it was built from: a client or server given another model fails.
TEST(ChunkLayout, ChecksTheTensorsItLaysOut) {
  const std::vector<Tensor> tensors = counts({{"a", 10}, {"b", 3}});
  auto layout = ChunkLayout::build(tensors, 2, 64);
  ASSERT_TRUE(layout.isOk());
  EXPECT_TRUE(layout->checkLaysOut(tensors).isOk());
  EXPECT_EQ(layout->checkLaysOut(counts({{"a", 10}})).message(), "the chunk layout has 2 tensors, the model 1");
  EXPECT_EQ(layout->checkLaysOut(counts({{"a", 10}, {"b", 4}})).message(),
            "the chunk layout has 12 bytes for tensor 1 ('b') of 4 floats");
}

// Checkpoints record this hash: its value for a tensor list may never change, or files written
// before would be refused. The values were taken from the hash as it was before model::Tensor
// (names and float counts; shapes do not enter).
TEST(ModelFingerprint, KeepsItsValueForTheSameNamesAndCounts) {
  EXPECT_EQ(modelFingerprint(model::vgg19().tensors()), 0xf618dc2616100592ull);
  EXPECT_EQ(modelFingerprint(model::vgg19_22k().tensors()), 0xc93191ef01c54c1dull);
  EXPECT_EQ(modelFingerprint(counts({{"a", 3}, {"b", 4}})), 0x14132751ce8489ull);
  std::vector<Tensor> shaped = counts({{"a", 3}, {"b", 4}});
  shaped[1].shape = {2, 2};
  EXPECT_EQ(modelFingerprint(shaped), 0x14132751ce8489ull);
  EXPECT_NE(modelFingerprint(counts({{"a", 3}, {"b", 5}})), 0x14132751ce8489ull);
}

}  // namespace
}  // namespace poseidon::ps
