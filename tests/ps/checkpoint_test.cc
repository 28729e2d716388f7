// Checkpoint files: a round trip is bit-identical; a file from another job, a damaged file or a
// file that is not a checkpoint at all is refused with a message naming the field and both values,
// never a crash; a crash while writing never hides the previous complete checkpoint.
#include "ps/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <random>

#include "ps/checkpoint/checkpoint_names.h"
#include "tests/support/mesh.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

// Counts the largest allocation while a test asks, to show that a huge length read from a file is
// refused before anything is allocated for it.
namespace {
std::atomic<bool> g_track_allocations{false};
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_track_allocations.load(std::memory_order_relaxed)) {
    size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
    while (size > seen && !g_largest_allocation.compare_exchange_weak(seen, size)) {}
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Not inlined: GCC would then pair the free() with the `new` at each call site and warn.
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace poseidon::ps {
namespace {

using poseidon::testing::TempDir;
using transport::wire::crc32c;
using transport::wire::loadLe32;
using transport::wire::loadLe64;
using transport::wire::storeLe32;
using Bytes = std::vector<uint8_t>;

CheckpointIdentity baseIdentity() {
  CheckpointIdentity id;
  id.server = 1;
  id.servers = 2;
  id.workers = 3;
  id.chunk_bytes = 1048576;
  id.model_fingerprint = 0x0123456789abcdefULL;
  id.chunks = 4;
  id.elements = 1000;
  id.state_words = 2;
  id.optimizer = "adam lr=0.001 beta1=0.9 beta2=0.999";
  id.consistency = "ssp:3";
  return id;
}

// Buffers sized for an identity, and the CheckpointData that points into them.
struct Model {
  explicit Model(const CheckpointIdentity& id)
      : params(id.elements),
        state0(id.state_words >= 1 ? id.elements : 0),
        state1(id.state_words >= 2 ? id.elements : 0) {
    data.params = params;
    data.state0 = state0;
    data.state1 = state1;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Arbitrary bit patterns (NaNs with payloads, -0, infinities, denormals included): a round trip
  // must keep bits, not just values.
  void fill(const CheckpointIdentity& id, uint32_t seed, uint64_t clock) {
    uint32_t x = seed * 2654435761u + 1;
    for (auto* v : {&params, &state0, &state1}) {
      for (float& f : *v) {
        x = x * 1664525u + 1013904223u;
        f = std::bit_cast<float>(x);
      }
    }
    const uint32_t specials[] = {0x7fc12345u, 0x80000000u, 0x7f800000u, 0x00000001u, 0xffffffffu};
    for (size_t i = 0; i < std::size(specials) && i < params.size(); ++i) params[i] = std::bit_cast<float>(specials[i]);
    data.clock = clock;
    data.chunk_steps.assign(id.chunks, 0);
    data.applied.assign(uint64_t{id.chunks} * id.workers, 0);
    for (size_t i = 0; i < data.chunk_steps.size(); ++i) data.chunk_steps[i] = 1000 * seed + i;
    for (size_t i = 0; i < data.applied.size(); ++i) data.applied[i] = (uint64_t{seed} << 40) + i;
  }

  void poison() {
    for (auto* v : {&params, &state0, &state1}) std::fill(v->begin(), v->end(), std::bit_cast<float>(0x5a5a5a5au));
  }

  std::vector<float> params, state0, state1;
  CheckpointData data;
};

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // Empty vectors have no data pointer, which memcmp must not be given.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void expectSameContents(const Model& loaded, const Model& written) {
  EXPECT_TRUE(sameBits(loaded.params, written.params));
  EXPECT_TRUE(sameBits(loaded.state0, written.state0));
  EXPECT_TRUE(sameBits(loaded.state1, written.state1));
  EXPECT_EQ(loaded.data.clock, written.data.clock);
  EXPECT_EQ(loaded.data.chunk_steps, written.data.chunk_steps);
  EXPECT_EQ(loaded.data.applied, written.data.applied);
}

Bytes readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void writeFile(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// The file format written out independently of the implementation: field, size in bytes.
std::vector<std::pair<std::string, uint64_t>> layoutOf(const CheckpointIdentity& id) {
  const uint64_t e = id.elements * 4;
  std::vector<std::pair<std::string, uint64_t>> fields = {{"magic", 8},
                                                          {"format version", 4},
                                                          {"server", 4},
                                                          {"servers", 4},
                                                          {"workers", 4},
                                                          {"chunk_bytes", 8},
                                                          {"model_fingerprint", 8},
                                                          {"chunks", 4},
                                                          {"elements", 8},
                                                          {"state_words", 4},
                                                          {"optimizer length", 4},
                                                          {"optimizer", id.optimizer.size()},
                                                          {"consistency length", 4},
                                                          {"consistency", id.consistency.size()},
                                                          {"clock", 8},
                                                          {"chunk_steps", id.chunks * 8ULL},
                                                          {"applied count", 8},
                                                          {"applied", uint64_t{id.chunks} * id.workers * 8},
                                                          {"params", e}};
  if (id.state_words >= 1) fields.emplace_back("state word 0", e);
  if (id.state_words >= 2) fields.emplace_back("state word 1", e);
  fields.emplace_back("checksum", 4);
  return fields;
}

uint64_t offsetOf(const CheckpointIdentity& id, const std::string& field) {
  uint64_t at = 0;
  for (const auto& [name, bytes] : layoutOf(id)) {
    if (name == field) return at;
    at += bytes;
  }
  return at;
}

class Checkpoint : public ::testing::Test {
 protected:
  Checkpoint() : id(baseIdentity()), written(id) { written.fill(id, 7, 40); }

  // Writes `written` at clock 40 and returns its path.
  std::string writeBase() {
    const auto status = writeCheckpoint(dir.path(), id, written.data);
    EXPECT_TRUE(status.isOk()) << status.toString();
    return checkpointPath(dir.path(), id.server, 40);
  }

  Status load(const CheckpointIdentity& as, uint64_t clock = 40) {
    Model loaded(as);
    return loadCheckpoint(dir.path(), as, clock, loaded.data);
  }

  TempDir dir;
  CheckpointIdentity id;
  Model written;
};

TEST_F(Checkpoint, RoundTripIsBitIdenticalForEveryStateWordCount) {
  for (uint32_t words = 0; words <= 2; ++words) {
    id.state_words = words;
    Model source(id);
    source.fill(id, words + 1, 100 + words);
    ASSERT_TRUE(writeCheckpoint(dir.path(), id, source.data).isOk());
    Model loaded(id);
    loaded.poison();
    const auto status = loadCheckpoint(dir.path(), id, 100 + words, loaded.data);
    ASSERT_TRUE(status.isOk()) << status.toString();
    expectSameContents(loaded, source);
  }
}

TEST_F(Checkpoint, LargeArraysRoundTripPastTheWriteBuffer) {
  id.elements = 1500000;  // 6 MB per array: written straight from the caller's memory
  Model source(id);
  source.fill(id, 3, 9);
  ASSERT_TRUE(writeCheckpoint(dir.path(), id, source.data).isOk());
  EXPECT_EQ(std::filesystem::file_size(checkpointPath(dir.path(), 1, 9)), offsetOf(id, "checksum") + 4);
  Model loaded(id);
  ASSERT_TRUE(loadCheckpoint(dir.path(), id, 9, loaded.data).isOk());
  expectSameContents(loaded, source);
}

TEST_F(Checkpoint, FileLayoutIsTheDocumentedLittleEndianFormat) {
  const Bytes file = readFile(writeBase());
  ASSERT_EQ(file.size(), offsetOf(id, "checksum") + 4);
  EXPECT_EQ(std::string(file.begin(), file.begin() + 8), "PSDNCKPT");
  EXPECT_EQ(loadLe32(&file[offsetOf(id, "format version")]), 1u);
  EXPECT_EQ(loadLe32(&file[offsetOf(id, "server")]), 1u);
  EXPECT_EQ(loadLe32(&file[offsetOf(id, "workers")]), 3u);
  EXPECT_EQ(loadLe64(&file[offsetOf(id, "chunk_bytes")]), 1048576u);
  EXPECT_EQ(loadLe64(&file[offsetOf(id, "model_fingerprint")]), id.model_fingerprint);
  EXPECT_EQ(loadLe32(&file[offsetOf(id, "optimizer length")]), id.optimizer.size());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&file[offsetOf(id, "consistency")]), 5), "ssp:3");
  EXPECT_EQ(loadLe64(&file[offsetOf(id, "clock")]), 40u);
  EXPECT_EQ(loadLe64(&file[offsetOf(id, "applied count")]), 12u);
  EXPECT_EQ(loadLe64(&file[offsetOf(id, "applied") + 8 * 11]), written.data.applied[11]);
  EXPECT_EQ(loadLe32(&file[offsetOf(id, "params")]), 0x7fc12345u);
  EXPECT_EQ(loadLe32(&file[file.size() - 4]), crc32c(file.data(), file.size() - 4));
}

struct IdentityCase {
  std::string field;
  std::function<void(CheckpointIdentity&)> change;
  std::string in_file;
  std::string in_job;
};

TEST_F(Checkpoint, RefusesEveryIdentityMismatchNamingFieldAndBothValues) {
  const std::string path = writeBase();
  const std::vector<IdentityCase> cases = {
      {"servers", [](auto& i) { i.servers = 3; }, "2", "3"},
      {"workers", [](auto& i) { i.workers = 4; }, "3", "4"},
      {"chunk_bytes", [](auto& i) { i.chunk_bytes = 2097152; }, "1048576", "2097152"},
      {"model_fingerprint", [](auto& i) { i.model_fingerprint = 0xfedcba9876543210ULL; }, "0x0123456789abcdef",
       "0xfedcba9876543210"},
      {"chunks", [](auto& i) { i.chunks = 5; }, "4", "5"},
      {"elements", [](auto& i) { i.elements = 1001; }, "1000", "1001"},
      {"state_words", [](auto& i) { i.state_words = 1; }, "2", "1"},
      {"optimizer", [](auto& i) { i.optimizer = "sgd lr=0.1"; }, "\"" + id.optimizer + "\"", "\"sgd lr=0.1\""},
      {"consistency", [](auto& i) { i.consistency = "bsp"; }, "\"ssp:3\"", "\"bsp\""},
  };
  for (const auto& c : cases) {
    CheckpointIdentity other = id;
    c.change(other);
    const auto status = load(other);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(status.message(),
              "checkpoint " + path + " was written with " + c.field + " " + c.in_file + "; this job uses " + c.in_job);
  }
  // The server and clock are also in the name; a renamed file is caught by its header.
  std::filesystem::copy_file(path, checkpointPath(dir.path(), 2, 40));
  CheckpointIdentity server2 = id;
  server2.server = 2;
  EXPECT_TRUE(contains(load(server2), "was written with server 1; this job uses 2"));
  std::filesystem::rename(path, checkpointPath(dir.path(), 1, 41));
  EXPECT_TRUE(contains(load(id, 41), "was written with clock 40; this job uses 41"));
}

TEST_F(Checkpoint, RefusesAnotherFormatOrVersion) {
  const std::string path = writeBase();
  Bytes file = readFile(path);
  Bytes wrong_magic = file;
  std::memcpy(wrong_magic.data(),
              "\x7f"
              "ELF\x02\x01\x01\x00",
              8);
  writeFile(path, wrong_magic);
  auto status = load(id);
  EXPECT_EQ(status.message(), "checkpoint " + path +
                                  " is not a Poseidon checkpoint: it starts with \"\\x7fELF\\x02\\x01\\x01\\x00\", "
                                  "not \"PSDNCKPT\"");
  Bytes version2 = file;
  storeLe32(&version2[8], 2);
  writeFile(path, version2);
  EXPECT_TRUE(contains(load(id), "has format version 2; this build reads version 1"));
}

TEST_F(Checkpoint, RefusesATruncatedFileAtEveryFieldNamingItNeverTouchingTheBuffers) {
  const std::string path = writeBase();
  const Bytes file = readFile(path);
  uint64_t start = 0;
  for (const auto& [field, bytes] : layoutOf(id)) {
    for (const uint64_t cut : {start, start + bytes / 2, start + bytes - 1}) {
      writeFile(path, Bytes(file.begin(), file.begin() + static_cast<ptrdiff_t>(cut)));
      Model loaded(id);
      loaded.poison();
      const auto status = loadCheckpoint(dir.path(), id, 40, loaded.data);
      EXPECT_EQ(status.code(), StatusCode::kIoError) << cut;
      const std::string expected = fmt::format(
          "checkpoint {} is truncated: field {} needs {} bytes at offset {}, "
          "but the file has {} bytes",
          path, field, bytes, start, cut);
      EXPECT_EQ(status.message(), expected);
      EXPECT_EQ(loaded.params[17], std::bit_cast<float>(0x5a5a5a5au)) << field;
      EXPECT_TRUE(loaded.data.applied.empty()) << field;
    }
    start += bytes;
  }
}

TEST_F(Checkpoint, RefusesTrailingGarbage) {
  const std::string path = writeBase();
  Bytes file = readFile(path);
  const size_t size = file.size();
  file.insert(file.end(), {'x', 'y', 'z'});
  writeFile(path, file);
  EXPECT_TRUE(contains(load(id), fmt::format("has 3 bytes of trailing garbage after its checksum (a complete file "
                                             "has {} bytes)",
                                             size)));
}

TEST_F(Checkpoint, AFlippedByteAnywhereInThePayloadFailsTheChecksum) {
  const std::string path = writeBase();
  const Bytes file = readFile(path);
  for (const char* field : {"chunk_steps", "applied", "params", "state word 1", "checksum"}) {
    Bytes flipped = file;
    flipped[offsetOf(id, field) + 3] ^= 0x10;
    writeFile(path, flipped);
    const uint32_t stored = loadLe32(&flipped[flipped.size() - 4]);
    const uint32_t computed = crc32c(flipped.data(), flipped.size() - 4);
    const auto status = load(id);
    EXPECT_EQ(status.message(), fmt::format("checkpoint {} fails its checksum: the file stores CRC32C {:#010x} but "
                                            "its contents give {:#010x}",
                                            path, stored, computed))
        << field;
  }
}

TEST_F(Checkpoint, AHugeStringLengthIsRefusedBeforeAnythingIsAllocated) {
  const std::string path = writeBase();
  Bytes file = readFile(path);
  for (const uint32_t length : {0xffffffffu, 4097u}) {
    storeLe32(&file[offsetOf(id, "optimizer length")], length);
    writeFile(path, file);
    Model loaded(id);
    g_largest_allocation = 0;
    g_track_allocations = true;
    const auto status = loadCheckpoint(dir.path(), id, 40, loaded.data);
    g_track_allocations = false;
    EXPECT_EQ(status.message(),
              fmt::format("checkpoint {} field optimizer has length {}, beyond the limit of 4096 bytes", path, length));
    EXPECT_LT(g_largest_allocation.load(), 4096u);
  }
}

TEST_F(Checkpoint, RandomDamageIsAlwaysRefusedNeverACrash) {
  id.elements = 16;
  Model small(id);
  small.fill(id, 5, 40);
  ASSERT_TRUE(writeCheckpoint(dir.path(), id, small.data).isOk());
  const std::string path = checkpointPath(dir.path(), 1, 40);
  const Bytes file = readFile(path);
  std::mt19937 rng(12345);
  for (int round = 0; round < 400; ++round) {
    Bytes damaged = file;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) damaged[rng() % damaged.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (round % 4 == 1) damaged.resize(rng() % damaged.size());
    if (round % 4 == 2) {
      for (auto& b : damaged) b = static_cast<uint8_t>(rng());  // noise behind a valid magic
      std::memcpy(damaged.data(), "PSDNCKPT", std::min<size_t>(8, damaged.size()));
    }
    writeFile(path, damaged);
    Model loaded(id);
    EXPECT_FALSE(loadCheckpoint(dir.path(), id, 40, loaded.data).isOk()) << "round " << round;
  }
}

TEST_F(Checkpoint, BuffersSizedWrongAreInvalidArgument) {
  auto expectInvalid = [&](const CheckpointIdentity& as, const CheckpointData& data, const std::string& text) {
    const auto written_status = writeCheckpoint(dir.path(), as, data);
    EXPECT_EQ(written_status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_TRUE(contains(written_status, text)) << written_status.message();
    CheckpointData into = data;
    const auto loaded = loadCheckpoint(dir.path(), as, 40, into);
    if (text.find("floats") != std::string::npos || text.find("state_words") != std::string::npos) {
      EXPECT_EQ(loaded.code(), StatusCode::kInvalidArgument) << text;
    }
  };
  CheckpointData short_params = written.data;
  short_params.params = short_params.params.first(999);
  expectInvalid(id, short_params, "params has 999 floats; the identity needs 1000");
  CheckpointIdentity one_word = id;
  one_word.state_words = 1;
  expectInvalid(one_word, written.data, "state word 1 has 1000 floats; the identity needs 0");
  CheckpointIdentity three_words = id;
  three_words.state_words = 3;
  expectInvalid(three_words, written.data, "state_words 3 is not 0, 1 or 2");
  CheckpointData steps = written.data;
  steps.chunk_steps.pop_back();
  expectInvalid(id, steps, "chunk_steps has 3 values; the identity has 4 chunks");
  CheckpointData applied = written.data;
  applied.applied.push_back(1);
  expectInvalid(id, applied, "applied has 13 values; the identity needs chunks 4 x workers 3");
  CheckpointIdentity long_name = id;
  long_name.consistency.assign(4097, 'x');
  expectInvalid(long_name, written.data, "consistency string of 4097 bytes exceeds the limit 4096");
  EXPECT_TRUE(listCheckpoints(dir.path(), id.server).empty()) << "a refused write left a file";
  for (const int keep : {0, -1}) {
    const auto status = pruneCheckpoints(dir.path(), id.server, 40, 40, keep);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(status, fmt::format("keep {} is not >= 1", keep)));
  }
}

TEST_F(Checkpoint, LongestAllowedStringsRoundTrip) {
  id.optimizer.assign(4096, 'o');
  ASSERT_TRUE(writeCheckpoint(dir.path(), id, written.data).isOk());
  EXPECT_TRUE(load(id).isOk());
}

TEST_F(Checkpoint, IoErrorsNameThePath) {
  const std::string missing = dir.path() + "/none";
  auto status = load(id);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_EQ(status.message(), "open checkpoint " + checkpointPath(dir.path(), 1, 40) + ": No such file or directory");
  status = writeCheckpoint(missing + "/deeper", id, written.data);
  EXPECT_EQ(status.message(), "create checkpoint directory " + missing + "/deeper: No such file or directory");
  writeFile(missing, {1, 2, 3});
  status = writeCheckpoint(missing, id, written.data);
  EXPECT_EQ(status.code(), StatusCode::kIoError);
  EXPECT_TRUE(contains(status, missing)) << status.message();
  std::filesystem::create_directory(checkpointPath(dir.path(), 1, 7));
  EXPECT_TRUE(contains(load(id, 7), "is not a regular file"));
}

TEST_F(Checkpoint, CreatesAMissingDirectoryAndReplacesTheSameClock) {
  const std::string sub = dir.path() + "/ckpt";
  ASSERT_TRUE(writeCheckpoint(sub, id, written.data).isOk());
  Model second(id);
  second.fill(id, 8, 40);
  ASSERT_TRUE(writeCheckpoint(sub + "/", id, second.data).isOk());
  Model loaded(id);
  ASSERT_TRUE(loadCheckpoint(sub, id, 40, loaded.data).isOk());
  expectSameContents(loaded, second);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(sub), {}), 1);
}

TEST(CheckpointNames, ParseOnlyWhatCheckpointPathWrites) {
  const auto name = parseCheckpointName("server-12.clock-18446744073709551615.ckpt");
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(name->server, 12u);
  EXPECT_EQ(name->clock, 18446744073709551615ULL);
  EXPECT_TRUE(parseCheckpointName("server-0.clock-0.ckpt").has_value());
  for (const char* bad :
       {"server-1.clock-08.ckpt", "server-01.clock-8.ckpt", "server-+1.clock-8.ckpt", "server--1.clock-8.ckpt",
        "server-1.clock-.ckpt", "server-.clock-3.ckpt", "server-1.clock-3.ckpt.tmp.42", ".server-1.clock-3.ckpt.tmp.42",
        "server-1.clock-3.ckptx", "xserver-1.clock-3.ckpt", "server-1.clock-3", "server-1 .clock-3.ckpt",
        "server-4294967296.clock-3.ckpt", "server-1.clock-18446744073709551616.ckpt", "server-1.clock-0x10.ckpt", ""}) {
    EXPECT_FALSE(parseCheckpointName(bad).has_value()) << bad;
  }
  EXPECT_EQ(checkpointPath("/x", 1, 40), "/x/server-1.clock-40.ckpt");
  EXPECT_EQ(checkpointPath("/x/", 1, 40), "/x/server-1.clock-40.ckpt");
}

TEST_F(Checkpoint, ListIgnoresTemporaryAndForeignFiles) {
  for (const char* name : {"server-1.clock-40.ckpt", "server-1.clock-5.ckpt", "server-1.clock-7.ckpt",
                           ".server-1.clock-50.ckpt.tmp.123", "server-2.clock-60.ckpt", "server-1.clock-08.ckpt",
                           "server-1.clock-9.ckpt.bak", "server-11.clock-3.ckpt", "notes.txt"}) {
    writeFile(dir.path() + "/" + name, {});
  }
  std::filesystem::create_directory(dir.path() + "/server-1.clock-99.ckpt");
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{5, 7, 40}));
  EXPECT_EQ(listCheckpoints(dir.path(), 2), (std::vector<uint64_t>{60}));
  EXPECT_TRUE(listCheckpoints(dir.path() + "/missing", 1).empty());
}

TEST_F(Checkpoint, StaleTemporariesOfThisServerAreRemovedOthersKept) {
  const std::string own = ".server-1.clock-50.ckpt.tmp." + std::to_string(::getpid());
  for (const std::string& name :
       {std::string(".server-1.clock-50.ckpt.tmp.123"), std::string(".server-1.clock-9.ckpt.tmp.7"), own,
        std::string(".server-2.clock-50.ckpt.tmp.123"), std::string("server-1.clock-40.ckpt"),
        std::string(".server-1.clock-50.ckpt")}) {
    writeFile(dir.path() + "/" + name, {});
  }
  EXPECT_EQ(removeStaleTemporaries(dir.path(), 1), 2u);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) left.push_back(entry.path().filename());
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected = {own, ".server-1.clock-50.ckpt", ".server-2.clock-50.ckpt.tmp.123",
                                       "server-1.clock-40.ckpt"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected);
  EXPECT_EQ(removeStaleTemporaries(dir.path() + "/missing", 1), 0u);
}

TEST_F(Checkpoint, WritingRemovesNothing) {
  for (const uint64_t clock : {10, 20, 30}) {
    written.data.clock = clock;
    ASSERT_TRUE(writeCheckpoint(dir.path(), id, written.data).isOk());
  }
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{10, 20, 30}));
}

TEST_F(Checkpoint, PruningKeepsTheNewestUpToTheCommittedClockOfThisServerOnly) {
  CheckpointIdentity other = id;
  other.server = 2;
  ASSERT_TRUE(writeCheckpoint(dir.path(), other, written.data).isOk());  // clock 40 of server 2
  for (const uint64_t clock : {10, 20, 30, 40}) {
    written.data.clock = clock;
    ASSERT_TRUE(writeCheckpoint(dir.path(), id, written.data).isOk());
  }
  ASSERT_TRUE(pruneCheckpoints(dir.path(), 1, 40, 40, 2).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{30, 40}));
  EXPECT_EQ(listCheckpoints(dir.path(), 2), (std::vector<uint64_t>{40}));
  ASSERT_TRUE(pruneCheckpoints(dir.path(), 1, 40, 40, 1).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{40}));
}

// A file after the committed clock that every server has passed will never be on every disk: it
// goes. A later one may yet be: it stays, whatever `keep`.
TEST_F(Checkpoint, PruningRemovesWhatEveryServerPassedAndKeepsWhatMayYetBeCommitted) {
  for (const uint64_t clock : {10, 20, 30, 40, 50}) {
    written.data.clock = clock;
    ASSERT_TRUE(writeCheckpoint(dir.path(), id, written.data).isOk());
  }
  ASSERT_TRUE(pruneCheckpoints(dir.path(), 1, 20, 20, 1).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{20, 30, 40, 50}));
  ASSERT_TRUE(pruneCheckpoints(dir.path(), 1, 20, 40, 1).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{20, 50}));
  // Nothing committed yet (a fresh job) and nothing passed by all: nothing goes.
  ASSERT_TRUE(pruneCheckpoints(dir.path(), 1, 0, 0, 1).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{20, 50}));
}

TEST_F(Checkpoint, RemovingTheFilesAfterAClockLeavesItAndOtherServersAlone) {
  CheckpointIdentity other = id;
  other.server = 2;
  ASSERT_TRUE(writeCheckpoint(dir.path(), other, written.data).isOk());  // clock 40 of server 2
  for (const uint64_t clock : {10, 20, 30}) {
    written.data.clock = clock;
    ASSERT_TRUE(writeCheckpoint(dir.path(), id, written.data).isOk());
  }
  EXPECT_EQ(removeCheckpointsAfter(dir.path(), 1, 10), 2u);
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{10}));
  EXPECT_EQ(listCheckpoints(dir.path(), 2), (std::vector<uint64_t>{40}));
}

TEST_F(Checkpoint, ALeftoverTemporaryFileFromACrashDoesNotHideThePreviousCheckpoint) {
  writeBase();
  // What a writer killed halfway through clock 50 leaves behind.
  Model next(id);
  next.fill(id, 9, 50);
  TempDir scratch;
  ASSERT_TRUE(writeCheckpoint(scratch.path(), id, next.data).isOk());
  const Bytes complete = readFile(checkpointPath(scratch.path(), 1, 50));
  const std::string leftover = dir.path() + "/.server-1.clock-50.ckpt.tmp.99999";
  writeFile(leftover, Bytes(complete.begin(), complete.begin() + static_cast<ptrdiff_t>(complete.size() / 2)));

  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{40}));
  Model loaded(id);
  ASSERT_TRUE(loadCheckpoint(dir.path(), id, 40, loaded.data).isOk());
  expectSameContents(loaded, written);
  // The restarted job checkpoints again past it.
  ASSERT_TRUE(writeCheckpoint(dir.path(), id, next.data).isOk());
  EXPECT_EQ(listCheckpoints(dir.path(), 1), (std::vector<uint64_t>{40, 50}));
  Model again(id);
  ASSERT_TRUE(loadCheckpoint(dir.path(), id, 50, again.data).isOk());
  expectSameContents(again, next);
}

}  // namespace
}  // namespace poseidon::ps
