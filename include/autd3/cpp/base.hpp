/**
 * @file cpp/base.hpp
 * @brief C++ binding, part 1: Error, Result, Exception, names, Geometry, LinkOption, ClientConfig.
 * Include <autd3/autd3.hpp>, not this file (docs/cpp.md).
 * @since 0.3.0
 */
#ifndef AUTD3_CPP_BASE_HPP
#define AUTD3_CPP_BASE_HPP

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

/* g++'s -Wshadow flags the C API's functions named like a struct tag (autd3_link_stats() and struct
 * autd3_link_stats): C style, harmless in C++ (the _t typedefs are used), so not reported to a caller who
 * builds with -Wshadow. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#endif
#include "autd3/autd3.h"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#ifndef AUTD3_HPP_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(_CPPUNWIND)
#define AUTD3_HPP_EXCEPTIONS 1
#else
#define AUTD3_HPP_EXCEPTIONS 0
#endif
#endif
#if AUTD3_HPP_EXCEPTIONS
#include <stdexcept>
#endif

namespace autd3 {

class Response;

/** A failed call: the code, the detailed message autd3_last_error() gave right after it, and for a request the
 * per-device outcomes. */
struct Error {
  autd3_err_t code = AUTD3_OK;
  std::string message;
  std::shared_ptr<const Response> response; /**< per-device outcomes of a failed request or send_checked; else null */
  const char *name() const noexcept { return autd3_err_name(code); }
};

namespace detail {
/* Read the thread's message right after the failing call (the next libautd3 call may replace it). */
inline Error last_error(autd3_err_t code) {
  const char *m = autd3_last_error();
  return Error{code, (m != nullptr && m[0] != '\0') ? m : autd3_strerror(code), nullptr};
}
[[noreturn]] inline void fail(const Error &e);
template <class Rep, class Period>
uint32_t to_ms(std::chrono::duration<Rep, Period> d) {
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return ms <= 0 ? 0u : ms >= 0xFFFFFFFFll ? 0xFFFFFFFFu : static_cast<uint32_t>(ms);
}
template <class Rep, class Period>
uint64_t to_ns(std::chrono::duration<Rep, Period> d) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return ns <= 0 ? 0u : static_cast<uint64_t>(ns);
}
}  // namespace detail

#if AUTD3_HPP_EXCEPTIONS
/** What the throwing forms throw: the Error, with what() = "NAME: message". */
class Exception : public std::runtime_error {
 public:
  explicit Exception(Error e) : std::runtime_error(std::string(e.name()) + ": " + e.message), e_(std::move(e)) {}
  autd3_err_t code() const noexcept { return e_.code; }
  const Error &error() const noexcept { return e_; }

 private:
  Error e_;
};
inline void detail::fail(const Error &e) { throw Exception(e); }
#else
/* Without exceptions, value() on an error is a bug of the caller: report and abort (as std::optional::value would
 * terminate). Check has_value() / operator bool first. */
inline void detail::fail(const Error &e) {
  std::fprintf(stderr, "autd3: unchecked error %s: %s\n", e.name(), e.message.c_str());
  std::abort();
}
#endif

/** A value or an Error (expected-like). value() throws Exception (aborts without exceptions) on an error. */
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T v) : v_(std::in_place_index<0>, std::move(v)) {}      // NOLINT: implicit, as std::expected
  Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}  // NOLINT
  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  const Error &error() const { return std::get<1>(v_); }
  autd3_err_t code() const noexcept { return has_value() ? AUTD3_OK : std::get<1>(v_).code; }
  T &value() & { check(); return std::get<0>(v_); }
  const T &value() const & { check(); return std::get<0>(v_); }
  T value() && { check(); return std::get<0>(std::move(v_)); }
  T &operator*() & { return std::get<0>(v_); }
  T operator*() && { return std::get<0>(std::move(v_)); }
  T *operator->() { return &std::get<0>(v_); }
  const T *operator->() const { return &std::get<0>(v_); }

 private:
  void check() const { if (!has_value()) detail::fail(std::get<1>(v_)); }
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : e_(std::move(e)) {}  // NOLINT
  bool has_value() const noexcept { return !e_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  const Error &error() const { return *e_; }
  autd3_err_t code() const noexcept { return e_ ? e_->code : AUTD3_OK; }
  void value() const { if (e_) detail::fail(*e_); }

 private:
  std::optional<Error> e_;
};

namespace detail {
inline Result<void> check(autd3_err_t e) {
  if (e == AUTD3_OK) return {};
  return last_error(e);
}
}  // namespace detail

/* ---- library, names, timing models ---------------------------------------------------------- */

inline unsigned version() noexcept { return autd3_version(); }
inline const char *version_string() noexcept { return autd3_version_string(); }
inline const char *err_name(autd3_err_t e) noexcept { return autd3_err_name(e); }
inline const char *strerror(autd3_err_t e) noexcept { return autd3_strerror(e); }
inline const char *cmd_name(uint8_t cmd) noexcept { return autd3_cmd_name(cmd); }
inline const char *dev_err_message(uint8_t code) noexcept { return autd3_dev_err_message(code); }

enum class LinkKind : int {
  Emulator = AUTD3_LINK_EMULATOR, Echocat = AUTD3_LINK_ECHOCAT, Soem = AUTD3_LINK_SOEM,
  Ethercrab = AUTD3_LINK_ETHERCRAB, Twincat = AUTD3_LINK_TWINCAT, Remote = AUTD3_LINK_REMOTE
};
inline const char *link_kind_name(LinkKind k) noexcept { return autd3_link_kind_name(static_cast<autd3_link_kind_t>(k)); }
inline bool link_kind_available(LinkKind k) noexcept { return autd3_link_kind_available(static_cast<autd3_link_kind_t>(k)); }
inline Result<LinkKind> try_link_kind_parse(const std::string &name) {
  autd3_link_kind_t k{};
  if (autd3_err_t e = autd3_link_kind_parse(name.c_str(), &k); e != AUTD3_OK) return detail::last_error(e);
  return static_cast<LinkKind>(k);
}
#if AUTD3_HPP_EXCEPTIONS
inline LinkKind link_kind_parse(const std::string &name) { return try_link_kind_parse(name).value(); }
#endif

using TimingModel = autd3_timing_model_t;
inline TimingModel timing_model_default() noexcept { return autd3_timing_model_default(); }
inline TimingModel timing_model_pessimistic() noexcept { return autd3_timing_model_pessimistic(); }
inline TimingModel timing_model_ideal() noexcept { return autd3_timing_model_ideal(); }
inline Result<TimingModel> try_timing_model_parse(const std::string &s) {
  TimingModel t{};
  if (autd3_err_t e = autd3_timing_model_parse(s.c_str(), &t); e != AUTD3_OK) return detail::last_error(e);
  return t;
}
#if AUTD3_HPP_EXCEPTIONS
inline TimingModel timing_model_parse(const std::string &s) { return try_timing_model_parse(s).value(); }
#endif

using FirmwareVersion = autd3_fw_version_t;
using DevicePose = autd3_device_pose_t;
using Drive = autd3_drive_t;
using ControlPoint = autd3_control_point_t;
using LinkStats = autd3_link_stats_t;
using LinkStatus = autd3_link_status_t;
using ClientStats = autd3_client_stats_t;
using ClientDeviceStatus = autd3_client_device_status_t;
using DeviceCounters = autd3_device_counters_t;
using DeviceFault = autd3_device_fault_t;
using ExecEntry = autd3_exec_entry_t;
using OutputState = autd3_output_state_t;
using GpioOut = autd3_gpio_out_t;
inline DevicePose pose_at(float x, float y, float z) noexcept { return autd3_device_pose_at(x, y, z); }

/* ---- geometry ------------------------------------------------------------------------------- */

/** One transducer's world position (mm) and emission direction. */
struct Transducer {
  std::array<float, 3> pos;
  std::array<float, 3> dir;
};

/** Owner of an autd3_geometry_t. */
class Geometry {
 public:
  /** `n` devices in a row along x. */
  static Result<Geometry> try_create(size_t n) { return make(n, nullptr); }
  static Result<Geometry> try_create(const std::vector<DevicePose> &poses) { return make(poses.size(), poses.data()); }
  Geometry(Geometry &&o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
  Geometry &operator=(Geometry &&o) noexcept { std::swap(g_, o.g_); return *this; }
  Geometry(const Geometry &) = delete;
  Geometry &operator=(const Geometry &) = delete;
  ~Geometry() { autd3_geometry_free(g_); }

  size_t num_devices() const noexcept { return autd3_geometry_num_devices(g_); }
  size_t num_transducers(size_t dev) const noexcept { return autd3_geometry_num_transducers(g_, dev); }
  Result<Transducer> try_transducer(size_t dev, size_t tr) const {
    Transducer t{};
    if (autd3_err_t e = autd3_geometry_transducer(g_, dev, tr, t.pos.data(), t.dir.data()); e != AUTD3_OK)
      return detail::last_error(e);
    return t;
  }
  Result<void> try_set_sound_speed(float mm_per_s) { return detail::check(autd3_geometry_set_sound_speed(g_, mm_per_s)); }
  float sound_speed() const noexcept { return autd3_geometry_sound_speed(g_); }
  const autd3_geometry_t *get() const noexcept { return g_; }
  autd3_geometry_t *get() noexcept { return g_; }
#if AUTD3_HPP_EXCEPTIONS
  static Geometry create(size_t n) { return try_create(n).value(); }
  static Geometry create(const std::vector<DevicePose> &poses) { return try_create(poses).value(); }
  Transducer transducer(size_t dev, size_t tr) const { return try_transducer(dev, tr).value(); }
  void set_sound_speed(float mm_per_s) { try_set_sound_speed(mm_per_s).value(); }
#endif

 private:
  explicit Geometry(autd3_geometry_t *g) noexcept : g_(g) {}
  static Result<Geometry> make(size_t n, const DevicePose *p) {
    autd3_geometry_t *g = nullptr;
    if (autd3_err_t e = autd3_geometry_create(n, p, &g); e != AUTD3_OK) return detail::last_error(e);
    return Geometry(g);
  }
  autd3_geometry_t *g_ = nullptr;
};

/* ---- options -------------------------------------------------------------------------------- */

/**
 * A tagged link option holding the C defaults (autd3_link_option_default()). The strings it needs (adapter,
 * capture path, addresses, AMS net ids) are owned here and put into the C struct by c_option(), so the
 * option may be copied and moved freely. Fields without a setter: raw().
 */
class LinkOption {
 public:
  static LinkOption emulator() { return LinkOption(LinkKind::Emulator); }
  /** adapter "" = auto (the first adapter whose slaves are all AUTD3). */
  static LinkOption echocat(std::string adapter = "") { return LinkOption(LinkKind::Echocat).adapter(std::move(adapter)); }
  static LinkOption soem(std::string adapter = "") { return LinkOption(LinkKind::Soem).adapter(std::move(adapter)); }
  static LinkOption ethercrab(std::string adapter = "") { return LinkOption(LinkKind::Ethercrab).adapter(std::move(adapter)); }
  /** Local TwinCAT router; server_ip() for a remote runtime. */
  static LinkOption twincat() { return LinkOption(LinkKind::Twincat); }
  static LinkOption remote(std::string address) { LinkOption o(LinkKind::Remote); o.str_[kAddress] = std::move(address); return o; }
  explicit LinkOption(LinkKind k) : o_(autd3_link_option_default(static_cast<autd3_link_kind_t>(k))) {}

  LinkKind kind() const noexcept { return static_cast<LinkKind>(o_.kind); }
  /** The C struct (strings are set by c_option()). */
  autd3_link_option_t &raw() noexcept { return o_; }
  /** The C struct with this object's strings; valid while this object lives and is not changed (so not on a
   * temporary: that overload is deleted). */
  autd3_link_option_t c_option() const && = delete;
  autd3_link_option_t c_option() const & noexcept {
    autd3_link_option_t o = o_;
    if (autd3_ethercat_option_t *ec = autd3_link_option_ethercat(&o)) {
      if (str_[kAdapter]) ec->adapter = str_[kAdapter]->empty() ? nullptr : str_[kAdapter]->c_str();
      if (str_[kCapture]) ec->capture_path = str_[kCapture]->c_str();
    }
    if (o.kind == AUTD3_LINK_REMOTE && str_[kAddress]) o.u.remote.address = str_[kAddress]->c_str();
    if (o.kind == AUTD3_LINK_TWINCAT) {
      if (str_[kServerIp]) o.u.twincat.server_ip = str_[kServerIp]->c_str();
      if (str_[kServerAms]) o.u.twincat.server_ams_net_id = str_[kServerAms]->c_str();
      if (str_[kClientAms]) o.u.twincat.client_ams_net_id = str_[kClientAms]->c_str();
    }
    return o;
  }

  /* EtherCAT links (echocat, SOEM, EtherCrab); ignored for the other kinds (c_option() has no such section). */
  LinkOption &adapter(std::string a) { str_[kAdapter] = std::move(a); return *this; }
  LinkOption &capture_path(std::string p) { str_[kCapture] = std::move(p); return *this; }
  template <class R, class P>
  LinkOption &sync0_period(std::chrono::duration<R, P> d) { ec([&](auto &e) { e.sync0_period_ns = ns32(d); }); return *this; }
  template <class R, class P>
  LinkOption &sync0_shift(std::chrono::duration<R, P> d) {
    ec([&](auto &e) { e.sync0_shift_ns = static_cast<int32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); });
    return *this;
  }
  template <class R, class P>
  LinkOption &send_cycle(std::chrono::duration<R, P> d) { ec([&](auto &e) { e.send_cycle_ns = ns32(d); }); return *this; }
  template <class R, class P>
  LinkOption &sync_tolerance(std::chrono::duration<R, P> d) { ec([&](auto &e) { e.sync_tolerance_ns = ns32(d); }); return *this; }
  template <class R, class P>
  LinkOption &sync_timeout(std::chrono::duration<R, P> d) { ec([&](auto &e) { e.sync_timeout_ms = detail::to_ms(d); }); return *this; }
  template <class R, class P>
  LinkOption &state_timeout(std::chrono::duration<R, P> d) { ec([&](auto &e) { e.state_timeout_ms = detail::to_ms(d); }); return *this; }
  /* Emulator. */
  template <class R, class P>
  LinkOption &cycle(std::chrono::duration<R, P> d) { if (emu()) o_.u.emulator.cycle_ns = ns32(d); return *this; }
  LinkOption &timing(const TimingModel &t) { if (emu()) o_.u.emulator.timing = t; return *this; }
  LinkOption &firmware_version(const FirmwareVersion &v) { if (emu()) o_.u.emulator.version = v; return *this; }
  /* Remote and TwinCAT. */
  template <class R, class P>
  LinkOption &timeout(std::chrono::duration<R, P> d) {
    if (o_.kind == AUTD3_LINK_REMOTE) o_.u.remote.timeout_ms = detail::to_ms(d);
    if (o_.kind == AUTD3_LINK_TWINCAT) o_.u.twincat.timeout_ms = detail::to_ms(d);
    return *this;
  }
  LinkOption &server_ip(std::string ip) { str_[kServerIp] = std::move(ip); return *this; }
  LinkOption &server_ams_net_id(std::string id) { str_[kServerAms] = std::move(id); return *this; }
  LinkOption &client_ams_net_id(std::string id) { str_[kClientAms] = std::move(id); return *this; }

 private:
  enum { kAdapter, kCapture, kAddress, kServerIp, kServerAms, kClientAms, kCount };
  bool emu() const noexcept { return o_.kind == AUTD3_LINK_EMULATOR; }
  template <class F>
  void ec(F f) { if (autd3_ethercat_option_t *e = autd3_link_option_ethercat(&o_)) f(*e); }
  template <class R, class P>
  static uint32_t ns32(std::chrono::duration<R, P> d) {
    uint64_t ns = detail::to_ns(d);
    return ns > 0xFFFFFFFFu ? 0xFFFFFFFFu : static_cast<uint32_t>(ns);
  }
  autd3_link_option_t o_;
  std::array<std::optional<std::string>, kCount> str_{};
};

enum class Protocol : uint32_t { New = AUTD3_PROTOCOL_NEW, V12 = AUTD3_PROTOCOL_V12, Auto = AUTD3_PROTOCOL_AUTO };

/** The client configuration, starting from the C defaults (autd3_client_config_default()). */
class ClientConfig {
 public:
  ClientConfig() noexcept : c_(autd3_client_config_default()) {}
  ClientConfig &timeout_cycles(uint32_t v) noexcept { c_.timeout_cycles = v; return *this; }
  ClientConfig &max_inflight(uint32_t v) noexcept { c_.max_inflight = v; return *this; }
  ClientConfig &max_resync_rounds(uint32_t v) noexcept { c_.max_resync_rounds = v; return *this; }
  ClientConfig &low_latency(bool v) noexcept { c_.low_latency = v; return *this; }
  ClientConfig &reset_resend_cycles(uint32_t v) noexcept { c_.reset_resend_cycles = v; return *this; }
  ClientConfig &rt_priority(int v) noexcept { c_.rt_priority = v; return *this; }
  ClientConfig &rt_cpu(int v) noexcept { c_.rt_cpu = v; return *this; }
  ClientConfig &require_supported_firmware(bool v) noexcept { c_.require_supported_firmware = v; return *this; }
  template <class R, class P>
  ClientConfig &close_timeout(std::chrono::duration<R, P> d) noexcept { c_.close_timeout_ms = detail::to_ms(d); return *this; }
  ClientConfig &protocol(Protocol p) noexcept { c_.protocol = static_cast<uint32_t>(p); return *this; }
  Result<void> try_validate() const { return detail::check(autd3_client_config_validate(&c_)); }
#if AUTD3_HPP_EXCEPTIONS
  void validate() const { try_validate().value(); }
#endif
  const autd3_client_config_t &raw() const noexcept { return c_; }
  autd3_client_config_t &raw() noexcept { return c_; }

 private:
  autd3_client_config_t c_;
};

}  // namespace autd3

#endif /* AUTD3_CPP_BASE_HPP */
