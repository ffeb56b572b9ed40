// The fuzz targets under `make test`, with any compiler: every file of the checked-in corpus
// (tests/fuzz/corpus/<target>/, seeds and the reproducers of past crashes), then a
// deterministic mutation pass (COLLTUNE_FUZZ_MUTATIONS inputs per target, default the target's
// own count: 3000, fewer for the command-level targets) made
// from the corpus by bit flips, byte and token insertions, deletions, duplications (which
// deepen nesting), splices and truncations. Every input must end in success or
// colltune::Error: another exception fails the test naming the input; a crash or a hang
// (COLLTUNE_FUZZ_HANG_S, default 30 s, per input) aborts it after naming the input on stderr.
// Reproduce with: test_fuzz_replay --gtest_filter='*<target>*' and the printed iteration.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "fuzz_targets.hpp"

namespace colltune::fuzz {
namespace {

namespace fs = std::filesystem;
using Input = std::string;

// What is running now, for the crash and hang reports (plain data: read by a signal handler).
char g_current[256] = "";
std::atomic<long long> g_started_ms{0};

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void set_current(const std::string& what) {
  std::strncpy(g_current, what.c_str(), sizeof g_current - 1);
  g_started_ms = now_ms();
}

extern "C" void report_crash(int signo) {
  const char head[] = "\nfuzz replay: crashed on ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, g_current, std::strlen(g_current));
  (void)!write(2, "\n", 1);
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}

// Aborts the run when one input takes longer than the hang limit: a hang is a bug too.
class Watchdog {
 public:
  Watchdog() {
    const char* env = std::getenv("COLLTUNE_FUZZ_HANG_S");
    const long long limit_ms = (env ? std::atoll(env) : 30) * 1000;
    thread_ = std::thread([this, limit_ms] {
      while (!stop_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        // One load: the main thread resets the start to 0 between inputs, and reading it twice
        // could see a start, then 0, and call a fast input a hang.
        const long long started = g_started_ms.load();
        if (started > 0 && now_ms() - started > limit_ms) {
          std::fprintf(stderr, "\nfuzz replay: hang (over %lld ms) on %s\n", limit_ms, g_current);
          std::abort();
        }
      }
    });
  }
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::vector<Input> corpus(const Target& target) {
  std::vector<Input> files;
  const fs::path dir = fs::path(COLLTUNE_FUZZ_CORPUS) / target.name;
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file()) paths.push_back(entry.path());
  std::sort(paths.begin(), paths.end());  // a fixed order, so the mutation pass is reproducible
  for (const fs::path& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    files.push_back(text.str());
  }
  return files;
}

// One random edit of `s`; `rng` seeded per (target, iteration), so every run makes the same inputs.
void mutate(Input& s, const Target& target, const std::vector<Input>& seeds, std::mt19937_64& rng) {
  auto pick = [&rng](std::size_t n) { return n == 0 ? std::size_t{0} : static_cast<std::size_t>(rng() % n); };
  static const char kBytes[] = "{}[]\",:<>/=x0-9e.\\ \n\x00\xff";
  switch (rng() % 8) {
    case 0:
      if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8));
      break;
    case 1:
      if (!s.empty()) s[pick(s.size())] = kBytes[pick(sizeof kBytes - 1)];
      break;
    case 2: {
      const std::string_view token = target.tokens[pick(target.tokens.size())];
      s.insert(pick(s.size() + 1), token);
      break;
    }
    case 3: {
      const std::size_t at = pick(s.size() + 1);
      s.erase(at, pick(std::min<std::size_t>(s.size() - at, 64) + 1));
      break;
    }
    case 4: {  // duplicate a range in place, several times: deeper nesting, longer lists
      const std::size_t at = pick(s.size() + 1);
      const std::string range = s.substr(at, pick(64) + 1);
      const std::size_t copies = 1 + pick(rng() % 4 == 0 ? 2000 : 8);
      std::string repeated;
      for (std::size_t k = 0; k < copies && repeated.size() < (1u << 20); ++k) repeated += range;
      s.insert(at, repeated);
      break;
    }
    case 5: {  // splice a piece of another seed
      const Input& other = seeds[pick(seeds.size())];
      const std::size_t from = pick(other.size() + 1);
      s.insert(pick(s.size() + 1), other.substr(from, pick(256) + 1));
      break;
    }
    case 6:
      s.resize(pick(s.size() + 1));
      break;
    default: {  // a number replaced by an extreme one
      static const char* const kNumbers[] = {"0", "-1", "1e308", "1e400", "-0", "18446744073709551616", "nan",
                                             "4294967296", "2147483648", "0x10", "1.5"};
      const std::size_t at = s.find_first_of("0123456789", pick(s.size() + 1));
      if (at == std::string::npos) break;
      const std::size_t end = s.find_first_not_of("0123456789.", at);
      s.replace(at, (end == std::string::npos ? s.size() : end) - at, kNumbers[pick(std::size(kNumbers))]);
    }
  }
}

// Runs one input; an escaping exception fails the test and saves the input for reproduction.
// Returns whether the input was accepted (and so checked by the finite-answer oracle).
bool run_one(const Target& target, const Input& input, const std::string& what) {
  set_current(std::string(target.name) + " " + what);
  bool ok = false;
  try {
    ok = accepted(target, reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  } catch (const std::exception& e) {
    const fs::path saved = fs::temp_directory_path() / ("colltune-fuzz-" + std::string(target.name) + ".bin");
    std::ofstream(saved, std::ios::binary) << input;
    ADD_FAILURE() << target.name << " " << what << ": escaped with " << typeid(e).name() << ": " << e.what()
                  << " (input saved to " << saved << ")";
  }
  g_started_ms = 0;
  return ok;
}

std::size_t mutations_of(const Target& target) {
  const char* env = std::getenv("COLLTUNE_FUZZ_MUTATIONS");
  return env ? static_cast<std::size_t>(std::atoll(env)) : target.mutations;
}

class FuzzReplay : public ::testing::TestWithParam<std::size_t> {
 protected:
  // The handler runs on its own stack, so that a stack overflow is reported too.
  static void SetUpTestSuite() {
    static std::vector<char> alternate(1 << 16);
    stack_t ss{};
    ss.ss_sp = alternate.data();
    ss.ss_size = alternate.size();
    sigaltstack(&ss, nullptr);
    struct sigaction action {};
    action.sa_handler = report_crash;
    action.sa_flags = SA_ONSTACK;
    for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(signo, &action, nullptr);
  }
};

TEST_P(FuzzReplay, CorpusThenMutations) {
  const Target& target = targets()[GetParam()];
  const Watchdog watchdog;
  const std::vector<Input> seeds = corpus(target);
  ASSERT_FALSE(seeds.empty()) << "no corpus for " << target.name;
  std::size_t accepted_inputs = 0;
  for (std::size_t i = 0; i < seeds.size(); ++i)
    accepted_inputs += run_one(target, seeds[i], "corpus file #" + std::to_string(i)) ? 1 : 0;
  const std::size_t n = mutations_of(target);
  for (std::size_t it = 0; it < n; ++it) {
    std::mt19937_64 rng(GetParam() * 1000003 + it);
    Input input = seeds[rng() % seeds.size()];
    for (std::size_t edits = 1 + rng() % 4; edits > 0; --edits) mutate(input, target, seeds, rng);
    accepted_inputs += run_one(target, input, "mutation #" + std::to_string(it)) ? 1 : 0;
  }
  // How many inputs reached the oracle: a target whose inputs are all refused checks nothing.
  std::printf("%s: %zu inputs, %zu accepted and checked\n", target.name, seeds.size() + n, accepted_inputs);
  EXPECT_GT(accepted_inputs, 0u) << target.name << ": no input was accepted";
}

INSTANTIATE_TEST_SUITE_P(Parsers, FuzzReplay, ::testing::Range<std::size_t>(0, targets().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param) {
                           return std::string(targets()[param.param].name);
                         });

}  // namespace
}  // namespace colltune::fuzz
