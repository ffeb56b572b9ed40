// The finite-answer check of standard output (output_guard.hpp). stdout is replaced by a
// fopencookie stream whose write function checks complete lines and forwards them to file
// descriptor 1; std::cout writes into the same stream, so printf and std::cout keep their order.
#include "options/output_guard.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ext/stdio_sync_filebuf.h>
#include <iostream>
#include <memory>

#include "colltune/common/finite.hpp"

namespace colltune::cli {

struct StdoutGuard::State {
  FILE* original = nullptr;
  FILE* checked = nullptr;
  std::streambuf* original_cout = nullptr;
  std::unique_ptr<__gnu_cxx::stdio_sync_filebuf<char>> cout_buffer;
  std::string partial;                 // the start of a line not yet ended
  std::optional<std::string> withheld;  // the first line with a non-finite number
  bool unchecked = false;              // print_checked_json is writing

  void forward(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::write(STDOUT_FILENO, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // a closed pipe: SIGPIPE ends the process, as without the guard
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  void line(std::string_view text) {
    if (!withheld && (unchecked || !finite::non_finite_token(text))) return forward(text);
    if (!withheld) withheld = std::string(text.substr(0, text.find('\n')));
  }

  void take(std::string_view bytes) {
    for (std::size_t newline; (newline = bytes.find('\n')) != std::string_view::npos;) {
      partial.append(bytes.substr(0, newline + 1));
      line(partial);
      partial.clear();
      bytes.remove_prefix(newline + 1);
    }
    partial.append(bytes);
  }
};

namespace {

StdoutGuard::State* g_active = nullptr;  // the installed guard, for print_checked_json

ssize_t cookie_write(void* cookie, const char* data, std::size_t size) {
  static_cast<StdoutGuard::State*>(cookie)->take(std::string_view(data, size));
  return static_cast<ssize_t>(size);
}

}  // namespace

StdoutGuard::StdoutGuard() : s_(new State) {
  std::fflush(stdout);
  s_->original = stdout;
  cookie_io_functions_t io{nullptr, cookie_write, nullptr, nullptr};
  s_->checked = ::fopencookie(s_, "w", io);
  if (s_->checked == nullptr) return;  // no guard: output goes out unchecked
  std::setvbuf(s_->checked, nullptr, ::isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  stdout = s_->checked;
  s_->cout_buffer = std::make_unique<__gnu_cxx::stdio_sync_filebuf<char>>(s_->checked);
  s_->original_cout = std::cout.rdbuf(s_->cout_buffer.get());
  g_active = s_;
}

std::optional<std::string> StdoutGuard::finish() {
  std::cout.flush();
  if (s_->checked != nullptr) std::fflush(s_->checked);
  if (!s_->partial.empty()) {
    const std::string last = std::move(s_->partial);
    s_->partial.clear();
    s_->line(last);
  }
  return s_->withheld;
}

StdoutGuard::~StdoutGuard() {
  finish();
  if (s_->checked != nullptr) {
    std::cout.rdbuf(s_->original_cout);
    stdout = s_->original;
    std::fclose(s_->checked);
  }
  g_active = nullptr;
  delete s_;
}

void print_checked_json(std::string_view json) {
  std::cout.flush();
  std::fflush(stdout);
  if (g_active != nullptr) g_active->unchecked = true;
  std::cout << json << "\n";
  std::cout.flush();
  std::fflush(stdout);
  if (g_active != nullptr) g_active->unchecked = false;
}

}  // namespace colltune::cli
