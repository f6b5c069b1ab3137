/**
 * @file autd3.hpp
 * @brief C++17 header-only binding over the C API (docs/cpp.md).
 *
 * Every fallible call has two forms: `try_x(...)` returns autd3::Result<T>
 * (a value or an autd3::Error, never throws) and `x(...)` returns T or throws
 * autd3::Exception. The throwing forms exist only when the translation unit
 * has exceptions (AUTD3_HPP_EXCEPTIONS, detected from the compiler; with
 * -fno-exceptions only the try_ forms are declared). Owners (Geometry, Client,
 * Request, FrameBuffer, Link, EmulatorOutputs) are move-only and release their
 * C handle in the destructor; everything else is a value type. The calling
 * context of each call is the C function's (its header's "Context:" line).
 * @since 0.3.0
 */
#ifndef AUTD3_AUTD3_HPP
#define AUTD3_AUTD3_HPP

#include "autd3/cpp/base.hpp"
#include "autd3/cpp/command.hpp"

namespace autd3 {

/* ---- responses and requests ----------------------------------------------------------------- */

enum class Outcome : uint8_t {
  None = AUTD3_OUTCOME_NONE, Executed = AUTD3_OUTCOME_EXECUTED, NotExecuted = AUTD3_OUTCOME_NOT_EXECUTED,
  Unknown = AUTD3_OUTCOME_UNKNOWN
};

/** Per device: what it did with the frame and the data byte it returned. */
class Response {
 public:
  Response() noexcept : r_{} {}
  explicit Response(const autd3_response_t &r) noexcept : r_(r) {}
  size_t num_devices() const noexcept { return r_.num_devices; }
  Outcome outcome(size_t dev) const noexcept { return dev < r_.num_devices ? static_cast<Outcome>(r_.outcome[dev]) : Outcome::None; }
  uint8_t data(size_t dev) const noexcept { return dev < r_.num_devices ? r_.data[dev] : 0; }
  bool all_executed() const noexcept {
    for (size_t i = 0; i < r_.num_devices; i++)
      if (r_.outcome[i] != AUTD3_OUTCOME_EXECUTED) return false;
    return r_.num_devices > 0;
  }
  /** The first non-zero data byte as AUTD3_E_DEVICE naming the device (autd3_response_check()). */
  Result<void> try_check() const { return detail::check(autd3_response_check(&r_, nullptr, nullptr)); }
#if AUTD3_HPP_EXCEPTIONS
  void check() const { try_check().value(); }
#endif
  const autd3_response_t &raw() const noexcept { return r_; }

 private:
  autd3_response_t r_;
};

namespace detail {
inline Result<Response> finish(autd3_err_t e, const autd3_response_t &r) {
  if (e == AUTD3_OK) return Response(r);
  Error err = last_error(e);
  err.response = std::make_shared<const Response>(r);
  return err;
}
}  // namespace detail

/** Owner of one streaming send's handle: wait, poll or detach it once; the destructor detaches. */
class Request {
 public:
  Request(Request &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Request &operator=(Request &&o) noexcept { std::swap(h_, o.h_); return *this; }
  Request(const Request &) = delete;
  Request &operator=(const Request &) = delete;
  ~Request() { if (h_ != nullptr) (void)autd3_request_detach(h_); }
  bool valid() const noexcept { return h_ != nullptr; }

  /** Wait for completion: the Response if every device executed the frame, else the error with the Response. */
  Result<Response> try_wait() {
    if (h_ == nullptr) return released();
    autd3_response_t r{};
    autd3_err_t e = autd3_request_wait(std::exchange(h_, nullptr), &r);
    return detail::finish(e, r);
  }
  /** As try_wait() with a deadline: an empty optional (the handle still valid) if not done in time. */
  template <class R, class P>
  Result<std::optional<Response>> try_wait_for(std::chrono::duration<R, P> timeout) {
    if (h_ == nullptr) return released();
    autd3_response_t r{};
    return pending_or(autd3_request_wait_for(h_, detail::to_ms(timeout), &r), r);
  }
  /** Non-blocking: an empty optional (the handle still valid) if not done. */
  Result<std::optional<Response>> try_poll() {
    if (h_ == nullptr) return released();
    autd3_response_t r{};
    return pending_or(autd3_request_poll(h_, &r), r);
  }
  Result<void> try_detach() {
    if (h_ == nullptr) return released();
    return detail::check(autd3_request_detach(std::exchange(h_, nullptr)));
  }
#if AUTD3_HPP_EXCEPTIONS
  Response wait() { return try_wait().value(); }
  template <class R, class P>
  std::optional<Response> wait_for(std::chrono::duration<R, P> t) { return try_wait_for(t).value(); }
  std::optional<Response> poll() { return try_poll().value(); }
  void detach() { try_detach().value(); }
#endif

 private:
  friend class Client;
  explicit Request(autd3_request_t *h) noexcept : h_(h) {}
  /* The C API says INVALID_HANDLE for a handle used twice; a Request knows it without asking. */
  static Error released() { return Error{AUTD3_E_INVALID_HANDLE, "autd3::Request: already waited on, detached or moved from", nullptr}; }
  Result<std::optional<Response>> pending_or(autd3_err_t e, const autd3_response_t &r) {
    if (e == AUTD3_E_PENDING) return std::optional<Response>();
    h_ = nullptr; /* released by the call in every other case */
    Result<Response> f = detail::finish(e, r);
    if (!f) return f.error();
    return std::optional<Response>(*f);
  }
  autd3_request_t *h_ = nullptr;
};

/* ---- links and the emulator ----------------------------------------------------------------- */

/** Owner of a reference to an emulator link's output states (outlives the link). */
class EmulatorOutputs {
 public:
  EmulatorOutputs(EmulatorOutputs &&o) noexcept : o_(std::exchange(o.o_, nullptr)) {}
  EmulatorOutputs &operator=(EmulatorOutputs &&o) noexcept { std::swap(o_, o.o_); return *this; }
  EmulatorOutputs(const EmulatorOutputs &) = delete;
  EmulatorOutputs &operator=(const EmulatorOutputs &) = delete;
  ~EmulatorOutputs() { autd3_emulator_outputs_release(o_); }
  Result<OutputState> try_read(uint16_t dev) const {
    OutputState s;
    if (autd3_err_t e = autd3_emulator_outputs_read(o_, dev, &s); e != AUTD3_OK) return detail::last_error(e);
    return s;
  }
#if AUTD3_HPP_EXCEPTIONS
  OutputState read(uint16_t dev) const { return try_read(dev).value(); }
#endif

 private:
  friend class LinkRef;
  explicit EmulatorOutputs(autd3_emulator_outputs_t *o) noexcept : o_(o) {}
  autd3_emulator_outputs_t *o_ = nullptr;
};

/** A link the caller does not own (a client's): statistics, state checks, emulator fault injection. */
class LinkRef {
 public:
  explicit LinkRef(autd3_link_t *l) noexcept : l_(l) {}
  LinkKind kind() const noexcept { return static_cast<LinkKind>(autd3_link_kind(l_)); }
  size_t num_devices() const noexcept { return autd3_link_num_devices(l_); }
  LinkStats stats() const noexcept { LinkStats s{}; autd3_link_stats(l_, &s); return s; }
  uint32_t device_resets(uint16_t dev) const noexcept { return autd3_link_device_resets(l_, dev); }
  Result<LinkStatus> try_check_state() {
    LinkStatus s{};
    if (autd3_err_t e = autd3_link_check_state(l_, &s); e != AUTD3_OK) return detail::last_error(e);
    return s;
  }
  std::string diagnostics() const {
    std::string s(4096, '\0');
    s.resize(autd3_link_diagnostics(l_, &s[0], s.size()));
    return s;
  }
  /* Emulator links only (other kinds: an error). */
  Result<void> try_inject(uint16_t dev, const DeviceFault &f) { return detail::check(autd3_emulator_inject(l_, dev, &f)); }
  Result<void> try_power_cycle(uint16_t dev) { return detail::check(autd3_emulator_power_cycle(l_, dev)); }
  Result<DeviceCounters> try_counters(uint16_t dev) const {
    DeviceCounters c{};
    if (autd3_err_t e = autd3_emulator_counters(l_, dev, &c); e != AUTD3_OK) return detail::last_error(e);
    return c;
  }
  Result<OutputState> try_output(uint16_t dev) const {
    OutputState s;
    if (autd3_err_t e = autd3_emulator_output(l_, dev, &s); e != AUTD3_OK) return detail::last_error(e);
    return s;
  }
  Result<EmulatorOutputs> try_outputs() const {
    autd3_emulator_outputs_t *o = nullptr;
    if (autd3_err_t e = autd3_emulator_outputs(l_, &o); e != AUTD3_OK) return detail::last_error(e);
    return EmulatorOutputs(o);
  }
  /** Drain up to `max` entries of device `dev`'s execution log. */
  Result<std::vector<ExecEntry>> try_log_drain(uint16_t dev, size_t max = AUTD3_EXEC_LOG_CAPACITY, uint64_t *dropped = nullptr) {
    std::vector<ExecEntry> v(max);
    size_t n = 0;
    if (autd3_err_t e = autd3_emulator_log_drain(l_, dev, v.data(), v.size(), &n, dropped); e != AUTD3_OK) return detail::last_error(e);
    v.resize(n);
    return v;
  }
  autd3_link_t *get() const noexcept { return l_; }
#if AUTD3_HPP_EXCEPTIONS
  LinkStatus check_state() { return try_check_state().value(); }
  void inject(uint16_t dev, const DeviceFault &f) { try_inject(dev, f).value(); }
  void power_cycle(uint16_t dev) { try_power_cycle(dev).value(); }
  DeviceCounters counters(uint16_t dev) const { return try_counters(dev).value(); }
  OutputState output(uint16_t dev) const { return try_output(dev).value(); }
  EmulatorOutputs outputs() const { return try_outputs().value(); }
  std::vector<ExecEntry> log_drain(uint16_t dev, size_t max = AUTD3_EXEC_LOG_CAPACITY, uint64_t *dropped = nullptr) {
    return try_log_drain(dev, max, dropped).value();
  }
#endif

 private:
  autd3_link_t *l_;
};

/** Owner of a link driven by the caller (tools that run their own bus loop; most users open a Client). */
class Link {
 public:
  static Result<Link> try_open(const LinkOption &o, const Geometry &geo) {
    autd3_link_option_t c = o.c_option();
    autd3_link_t *l = nullptr;
    if (autd3_err_t e = autd3_link_open(&c, geo.get(), &l); e != AUTD3_OK) return detail::last_error(e);
    return Link(l);
  }
  Link(Link &&o) noexcept : l_(std::exchange(o.l_, nullptr)) {}
  Link &operator=(Link &&o) noexcept { std::swap(l_, o.l_); return *this; }
  Link(const Link &) = delete;
  Link &operator=(const Link &) = delete;
  ~Link() { autd3_link_close(l_); }
  /** One bus cycle: tx N × 626 bytes, rx N × 2; true if rx is this cycle's (not stale). */
  Result<bool> try_cycle(const std::vector<uint8_t> &tx, std::vector<uint8_t> &rx) {
    bool valid = false;
    rx.resize(view().num_devices() * AUTD3_RX_FRAME_BYTES);
    if (tx.size() != view().num_devices() * AUTD3_TX_FRAME_BYTES) return Error{AUTD3_E_INVALID_ARGUMENT, "tx must be N x 626 bytes", nullptr};
    if (autd3_err_t e = autd3_link_cycle(l_, tx.data(), rx.data(), &valid); e != AUTD3_OK) return detail::last_error(e);
    return valid;
  }
  Result<void> try_wait_next_cycle() { return detail::check(autd3_link_wait_next_cycle(l_)); }
  LinkRef view() const noexcept { return LinkRef(l_); }
#if AUTD3_HPP_EXCEPTIONS
  static Link open(const LinkOption &o, const Geometry &geo) { return try_open(o, geo).value(); }
  bool cycle(const std::vector<uint8_t> &tx, std::vector<uint8_t> &rx) { return try_cycle(tx, rx).value(); }
  void wait_next_cycle() { try_wait_next_cycle().value(); }
#endif

 private:
  explicit Link(autd3_link_t *l) noexcept : l_(l) {}
  autd3_link_t *l_ = nullptr;
};

/* ---- the client ----------------------------------------------------------------------------- */

/** Owner of an open client. The destructor closes it (silencing every device) and ignores the result; call
 * close() to know whether every device confirmed it is silent. */
class Client {
 public:
  static Result<Client> try_open(const Geometry &geo, const LinkOption &link, const ClientConfig &config = ClientConfig()) {
    autd3_link_option_t o = link.c_option();
    autd3_client_t *c = nullptr;
    if (autd3_err_t e = autd3_client_open(geo.get(), &o, &config.raw(), &c); e != AUTD3_OK) return detail::last_error(e);
    return Client(c);
  }
  Client(Client &&o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  Client &operator=(Client &&o) noexcept { std::swap(c_, o.c_); return *this; }
  Client(const Client &) = delete;
  Client &operator=(const Client &) = delete;
  ~Client() { if (c_ != nullptr) (void)autd3_client_close(c_); }
  bool is_open() const noexcept { return c_ != nullptr; }

  /** Silence every device and close; the client is closed whatever the result. */
  Result<void> try_close() { return detail::check(autd3_client_close(std::exchange(c_, nullptr))); }
  /** Queue a frame (streaming); blocks only on back-pressure. */
  Result<Request> try_send(const Frame &f) {
    autd3_request_t *r = nullptr;
    if (autd3_err_t e = autd3_client_send(c_, &f.raw(), &r); e != AUTD3_OK) return detail::last_error(e);
    return Request(r);
  }
  /** Queue a frame without a handle (still tracked and acked). */
  Result<void> try_send_detached(const Frame &f) { return detail::check(autd3_client_send(c_, &f.raw(), nullptr)); }
  /** Send, wait and check the data bytes. */
  Result<Response> try_send_checked(const Frame &f) {
    autd3_response_t r{};
    autd3_err_t e = autd3_client_send_checked(c_, &f.raw(), &r);
    return detail::finish(e, r);
  }
  Result<std::vector<FirmwareVersion>> try_firmware_versions() {
    std::vector<FirmwareVersion> v(num_devices());
    if (autd3_err_t e = autd3_client_read_firmware_version(c_, v.data()); e != AUTD3_OK) return detail::last_error(e);
    return v;
  }
  Result<std::vector<uint8_t>> try_error_details() { return bytes(autd3_client_read_error_detail); }
  Result<std::vector<uint8_t>> try_fpga_states() { return bytes(autd3_client_read_fpga_state); }
  Protocol protocol() const noexcept { return static_cast<Protocol>(autd3_client_protocol(c_)); }
  size_t num_devices() const noexcept { return autd3_client_num_devices(c_); }
  LinkRef link() const noexcept { return LinkRef(autd3_client_link(c_)); }
  ClientStats stats() const noexcept { ClientStats s{}; autd3_client_stats(c_, &s); return s; }
  uint32_t device_resets(uint16_t dev) const noexcept { return autd3_client_device_resets(c_, dev); }
  Result<ClientDeviceStatus> try_device_status(uint16_t dev) const {
    ClientDeviceStatus s{};
    if (autd3_err_t e = autd3_client_device_status(c_, dev, &s); e != AUTD3_OK) return detail::last_error(e);
    return s;
  }
  autd3_client_t *get() const noexcept { return c_; }
#if AUTD3_HPP_EXCEPTIONS
  static Client open(const Geometry &geo, const LinkOption &link, const ClientConfig &config = ClientConfig()) {
    return try_open(geo, link, config).value();
  }
  void close() { try_close().value(); }
  Request send(const Frame &f) { return try_send(f).value(); }
  void send_detached(const Frame &f) { try_send_detached(f).value(); }
  Response send_checked(const Frame &f) { return try_send_checked(f).value(); }
  std::vector<FirmwareVersion> firmware_versions() { return try_firmware_versions().value(); }
  std::vector<uint8_t> error_details() { return try_error_details().value(); }
  std::vector<uint8_t> fpga_states() { return try_fpga_states().value(); }
  ClientDeviceStatus device_status(uint16_t dev) const { return try_device_status(dev).value(); }
#endif

 private:
  explicit Client(autd3_client_t *c) noexcept : c_(c) {}
  Result<std::vector<uint8_t>> bytes(autd3_err_t (*fn)(autd3_client_t *, uint8_t *)) {
    std::vector<uint8_t> v(num_devices());
    if (autd3_err_t e = fn(c_, v.data()); e != AUTD3_OK) return detail::last_error(e);
    return v;
  }
  autd3_client_t *c_ = nullptr;
};

}  // namespace autd3

#endif /* AUTD3_AUTD3_HPP */
