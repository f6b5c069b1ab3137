/**
 * @file cpp/command.hpp
 * @brief C++ binding, part 2: the command encoders, modulations, STMs, frames, frame buffers and gains as
 * value types. Include <autd3/autd3.hpp>, not this file (docs/cpp.md).
 * @since 0.3.0
 */
#ifndef AUTD3_CPP_COMMAND_HPP
#define AUTD3_CPP_COMMAND_HPP

#include "autd3/cpp/base.hpp"

namespace autd3 {

/* ---- commands and frames (value types) ------------------------------------------------------ */

/** A bank transition. */
struct Transition {
  autd3_transition_t t{AUTD3_TRANSITION_IMMEDIATE, 0, 0};
  static Transition immediate() noexcept { return {}; }
  static Transition ext() noexcept { return {{AUTD3_TRANSITION_EXT, 0, 0}}; }
  static Transition sync_idx() noexcept { return {{AUTD3_TRANSITION_SYNC_IDX, 0, 0}}; }
  static Transition gpio(uint8_t pin) noexcept { return {{AUTD3_TRANSITION_GPIO, pin, 0}}; }
  /** At DC system time `t` (since the DC epoch, 2000-01-01). */
  template <class R, class P>
  static Transition sys_time(std::chrono::duration<R, P> t) noexcept { return {{AUTD3_TRANSITION_SYS_TIME, detail::to_ns(t), 0}}; }
};

/** One device's command (opcode + payload): built by the encoders of command.h. */
class Command {
 public:
  Command() noexcept : c_{} {}
  uint8_t opcode() const noexcept { return c_.cmd; }
  const autd3_command_t &raw() const noexcept { return c_; }

  static Result<Command> try_silencer_default() { return make([](auto *c) { return autd3_cmd_silencer_default(c); }); }
  static Result<Command> try_silencer_disable() { return make([](auto *c) { return autd3_cmd_silencer_disable(c); }); }
  template <class R1, class P1, class R2, class P2>
  static Result<Command> try_silencer_fixed_completion_time(std::chrono::duration<R1, P1> intensity,
                                                            std::chrono::duration<R2, P2> phase, bool strict = true) {
    return make([&](auto *c) { return autd3_cmd_silencer_fixed_completion_time(c, detail::to_ns(intensity), detail::to_ns(phase), strict); });
  }
  static Result<Command> try_silencer_fixed_update_rate(uint16_t intensity, uint16_t phase) {
    return make([&](auto *c) { return autd3_cmd_silencer_fixed_update_rate(c, intensity, phase); });
  }
  static Result<Command> try_write_pattern(uint8_t bank, uint32_t offset, const std::vector<Drive> &d) {
    return make([&](auto *c) { return autd3_cmd_write_pattern(c, bank, offset, d.data(), d.size()); });
  }
  static Result<Command> try_config_pattern(uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
    return make([&](auto *c) { return autd3_cmd_config_pattern(c, bank, divider, size, rep); });
  }
  static Result<Command> try_change_pattern_bank(uint8_t bank, const Transition &t) {
    return make([&](auto *c) { return autd3_cmd_change_pattern_bank(c, bank, &t.t); });
  }
  static Result<Command> try_write_pattern_fused(uint8_t bank, const std::array<Drive, AUTD3_NUM_TRANSDUCERS> &d,
                                                 uint16_t divider, const Transition &t = Transition::immediate()) {
    return make([&](auto *c) { return autd3_cmd_write_pattern_fused(c, bank, d.data(), divider, &t.t); });
  }
  static Result<Command> try_write_pattern_compressed(uint8_t bank, uint32_t index, autd3_pattern_compression_t format,
                                                      const std::vector<uint8_t> &phases) {
    return make([&](auto *c) {
      return autd3_cmd_write_pattern_compressed(c, bank, index, format, phases.data(), phases.size() / AUTD3_NUM_TRANSDUCERS);
    });
  }
  static Result<Command> try_phase_correction(const std::array<uint8_t, AUTD3_NUM_TRANSDUCERS> &p) {
    return make([&](auto *c) { return autd3_cmd_phase_correction(c, p.data()); });
  }
  static Result<Command> try_output_mask(const std::array<bool, AUTD3_NUM_TRANSDUCERS> &enabled) {
    return make([&](auto *c) { return autd3_cmd_output_mask(c, enabled.data()); });
  }
  static Result<Command> try_write_modulation(uint8_t bank, uint32_t offset, const std::vector<uint8_t> &d) {
    return make([&](auto *c) { return autd3_cmd_write_modulation(c, bank, offset, d.data(), d.size()); });
  }
  static Result<Command> try_config_modulation(uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
    return make([&](auto *c) { return autd3_cmd_config_modulation(c, bank, divider, size, rep); });
  }
  static Result<Command> try_change_modulation_bank(uint8_t bank, const Transition &t) {
    return make([&](auto *c) { return autd3_cmd_change_modulation_bank(c, bank, &t.t); });
  }
  static Result<Command> try_write_modulation_fused(uint8_t bank, const std::vector<uint8_t> &d, uint16_t divider, uint16_t rep,
                                                    const Transition &t = Transition::immediate()) {
    return make([&](auto *c) { return autd3_cmd_write_modulation_fused(c, bank, d.data(), d.size(), divider, rep, &t.t); });
  }
  static Result<Command> try_pulse_width_table(const std::array<uint16_t, AUTD3_PULSE_WIDTH_TABLE_SIZE> &t) {
    return make([&](auto *c) { return autd3_cmd_pulse_width_table(c, t.data()); });
  }
  static Result<Command> try_force_fan(bool on) { return make([&](auto *c) { return autd3_cmd_force_fan(c, on); }); }
  static Result<Command> try_emulate_gpio_in(const std::array<bool, 4> &in) {
    return make([&](auto *c) { return autd3_cmd_emulate_gpio_in(c, in.data()); });
  }
  static Result<Command> try_gpio_out(const std::array<GpioOut, 4> &o) {
    return make([&](auto *c) { return autd3_cmd_gpio_out(c, o.data()); });
  }
#if AUTD3_HPP_EXCEPTIONS
  static Command silencer_default() { return try_silencer_default().value(); }
  static Command silencer_disable() { return try_silencer_disable().value(); }
  template <class R1, class P1, class R2, class P2>
  static Command silencer_fixed_completion_time(std::chrono::duration<R1, P1> i, std::chrono::duration<R2, P2> p, bool strict = true) {
    return try_silencer_fixed_completion_time(i, p, strict).value();
  }
  static Command silencer_fixed_update_rate(uint16_t intensity, uint16_t phase) {
    return try_silencer_fixed_update_rate(intensity, phase).value();
  }
  static Command write_pattern(uint8_t bank, uint32_t offset, const std::vector<Drive> &d) {
    return try_write_pattern(bank, offset, d).value();
  }
  static Command config_pattern(uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
    return try_config_pattern(bank, divider, size, rep).value();
  }
  static Command change_pattern_bank(uint8_t bank, const Transition &t) { return try_change_pattern_bank(bank, t).value(); }
  static Command write_pattern_fused(uint8_t bank, const std::array<Drive, AUTD3_NUM_TRANSDUCERS> &d, uint16_t divider,
                                     const Transition &t = Transition::immediate()) {
    return try_write_pattern_fused(bank, d, divider, t).value();
  }
  static Command write_pattern_compressed(uint8_t bank, uint32_t index, autd3_pattern_compression_t format,
                                          const std::vector<uint8_t> &phases) {
    return try_write_pattern_compressed(bank, index, format, phases).value();
  }
  static Command phase_correction(const std::array<uint8_t, AUTD3_NUM_TRANSDUCERS> &p) { return try_phase_correction(p).value(); }
  static Command output_mask(const std::array<bool, AUTD3_NUM_TRANSDUCERS> &enabled) { return try_output_mask(enabled).value(); }
  static Command write_modulation(uint8_t bank, uint32_t offset, const std::vector<uint8_t> &d) {
    return try_write_modulation(bank, offset, d).value();
  }
  static Command config_modulation(uint8_t bank, uint16_t divider, uint32_t size, uint16_t rep) {
    return try_config_modulation(bank, divider, size, rep).value();
  }
  static Command change_modulation_bank(uint8_t bank, const Transition &t) { return try_change_modulation_bank(bank, t).value(); }
  static Command write_modulation_fused(uint8_t bank, const std::vector<uint8_t> &d, uint16_t divider, uint16_t rep,
                                        const Transition &t = Transition::immediate()) {
    return try_write_modulation_fused(bank, d, divider, rep, t).value();
  }
  static Command pulse_width_table(const std::array<uint16_t, AUTD3_PULSE_WIDTH_TABLE_SIZE> &t) {
    return try_pulse_width_table(t).value();
  }
  static Command force_fan(bool on) { return try_force_fan(on).value(); }
  static Command emulate_gpio_in(const std::array<bool, 4> &in) { return try_emulate_gpio_in(in).value(); }
  static Command gpio_out(const std::array<GpioOut, 4> &o) { return try_gpio_out(o).value(); }
#endif
  /** Wrap a command built by a C encoder. */
  static Command from_raw(const autd3_command_t &c) noexcept { Command r; r.c_ = c; return r; }

 private:
  template <class F>
  static Result<Command> make(F f) {
    Command c;
    if (autd3_err_t e = f(&c.c_); e != AUTD3_OK) return detail::last_error(e);
    return c;
  }
  autd3_command_t c_;
};

inline std::array<uint16_t, AUTD3_PULSE_WIDTH_TABLE_SIZE> pulse_width_table_default() noexcept {
  std::array<uint16_t, AUTD3_PULSE_WIDTH_TABLE_SIZE> t{};
  autd3_pulse_width_table_default(t.data());
  return t;
}

namespace detail {
inline Result<std::vector<Command>> commands(autd3_err_t e, const std::vector<autd3_command_t> &buf, size_t n) {
  if (e != AUTD3_OK) return last_error(e);
  std::vector<Command> out;
  out.reserve(n);
  for (size_t i = 0; i < n; i++) out.push_back(Command::from_raw(buf[i]));
  return out;
}
}  // namespace detail

/** A modulation and its samples (owned). */
class Modulation {
 public:
  /** Sine of `freq_hz` sampled every `divider` × 25 µs (pyautd3's default depth: amplitude 255, offset 127). */
  static Result<Modulation> try_sine(float freq_hz, uint16_t divider = 10, uint8_t amplitude = 255, uint8_t offset = 127) {
    Modulation m;
    m.buf_.resize(65536);
    if (autd3_err_t e = autd3_modulation_sine(freq_hz, divider, amplitude, offset, m.buf_.data(), m.buf_.size(), &m.m_); e != AUTD3_OK)
      return detail::last_error(e);
    m.buf_.resize(m.m_.size);
    return m;
  }
  static Result<Modulation> try_static(uint8_t intensity = 255) {
    Modulation m;
    m.buf_.resize(2);
    if (autd3_err_t e = autd3_modulation_static(intensity, m.buf_.data(), &m.m_); e != AUTD3_OK) return detail::last_error(e);
    return m;
  }
  /** Any samples (255 = full), one every `divider` × 25 µs, looping forever, switched to at once. */
  static Modulation custom(std::vector<uint8_t> samples, uint16_t divider) {
    Modulation m;
    m.buf_ = std::move(samples);
    m.m_.size = m.buf_.size();
    m.m_.divider = divider;
    return m;
  }
  Modulation &bank(uint8_t b) noexcept { m_.bank = b; return *this; }
  Modulation &rep(uint16_t r) noexcept { m_.rep = r; return *this; }
  Modulation &transition(const Transition &t) noexcept { m_.transition = t.t; return *this; }
  Modulation &later(bool l) noexcept { m_.later = l; return *this; }
  const std::vector<uint8_t> &samples() const noexcept { return buf_; }
  uint16_t divider() const noexcept { return m_.divider; }
  /** The broadcast commands that send it, in order. */
  Result<std::vector<Command>> try_commands() const {
    autd3_modulation_t m = m_;
    m.data = buf_.data();
    m.size = buf_.size();
    std::vector<autd3_command_t> out(AUTD3_MODULATION_MAX_COMMANDS);
    size_t n = 0;
    autd3_err_t e = autd3_modulation_commands(&m, out.data(), out.size(), &n);
    return detail::commands(e, out, n);
  }
#if AUTD3_HPP_EXCEPTIONS
  static Modulation sine(float freq_hz, uint16_t divider = 10, uint8_t amplitude = 255, uint8_t offset = 127) {
    return try_sine(freq_hz, divider, amplitude, offset).value();
  }
  /* `static` is a C++ keyword: the twin of try_static() is static_(). */
  static Modulation static_(uint8_t intensity = 255) { return try_static(intensity).value(); }
  std::vector<Command> commands() const { return try_commands().value(); }
#endif

 private:
  Modulation() noexcept : m_{nullptr, 0, 1, AUTD3_LOOP_INFINITE, 0, {AUTD3_TRANSITION_IMMEDIATE, 0, 0}, false} {}
  std::vector<uint8_t> buf_;
  autd3_modulation_t m_;
};

/** A pattern STM of one device: size × 249 drives, pattern after pattern. */
struct PatternStm {
  std::vector<Drive> drives;
  uint16_t divider = 1;
  uint16_t rep = AUTD3_LOOP_INFINITE;
  uint8_t bank = 0;
  Transition transition{};
  bool later = false;
  int compression = 0; /**< 0, AUTD3_PATTERN_PHASE_FULL or AUTD3_PATTERN_PHASE_HALF */
  Result<std::vector<Command>> try_commands() const {
    autd3_pattern_stm_t s{drives.data(), drives.size() / AUTD3_NUM_TRANSDUCERS, divider, rep, bank, transition.t, later, compression};
    std::vector<autd3_command_t> out(AUTD3_PATTERN_STM_MAX_COMMANDS);
    size_t n = 0;
    autd3_err_t e = autd3_pattern_stm_commands(&s, out.data(), out.size(), &n);
    return detail::commands(e, out, n);
  }
#if AUTD3_HPP_EXCEPTIONS
  std::vector<Command> commands() const { return try_commands().value(); }
#endif
};

/** A foci STM: size steps of num_foci points; intensities empty = 255. */
struct FociStm {
  std::vector<ControlPoint> points;
  std::vector<uint8_t> intensities;
  uint8_t num_foci = 1;
  uint16_t divider = 1;
  uint16_t rep = AUTD3_LOOP_INFINITE;
  uint8_t bank = 0;
  Transition transition{};
  bool later = false;
  Result<std::vector<Command>> try_commands(const Geometry &geo, size_t dev) const {
    size_t size = num_foci == 0 ? 0 : points.size() / num_foci;
    autd3_foci_stm_t s{points.data(), intensities.empty() ? nullptr : intensities.data(), size, num_foci, divider, rep, bank,
                       transition.t, later};
    std::vector<autd3_command_t> out(AUTD3_FOCI_STM_MAX_COMMANDS);
    size_t n = 0;
    autd3_err_t e = autd3_foci_stm_commands(&s, geo.get(), dev, out.data(), out.size(), &n);
    return detail::commands(e, out, n);
  }
#if AUTD3_HPP_EXCEPTIONS
  std::vector<Command> commands(const Geometry &geo, size_t dev) const { return try_commands(geo, dev).value(); }
#endif
};

/** A frame to send. A frame from a FrameBuffer points into it: keep the buffer until the request completes. */
class Frame {
 public:
  static Frame simple(uint8_t cmd) noexcept { return Frame(autd3_frame_simple(cmd)); }
  static Frame set_mode(autd3_fw_mode_t mode) noexcept { return Frame(autd3_frame_set_mode(mode)); }
  static Result<Frame> try_broadcast(const Command &c) {
    autd3_frame_t f;
    if (autd3_err_t e = autd3_frame_broadcast(&c.raw(), &f); e != AUTD3_OK) return detail::last_error(e);
    return Frame(f);
  }
  /** XorHash with the device sleeping `sleep` (whole ms, at most 65 535 ms: the command's 16-bit field). */
  template <class R, class P>
  static Result<Frame> try_xor_hash(std::chrono::duration<R, P> sleep, const std::vector<uint8_t> &data) {
    uint32_t ms = detail::to_ms(sleep);
    if (ms > 0xFFFFu) return Error{AUTD3_E_INVALID_ARGUMENT, "autd3::Frame::xor_hash: sleep is at most 65535 ms", nullptr};
    autd3_frame_t f;
    if (autd3_err_t e = autd3_frame_xor_hash(&f, static_cast<uint16_t>(ms), data.data(), data.size()); e != AUTD3_OK)
      return detail::last_error(e);
    return Frame(f);
  }
  static Result<Frame> try_xor_hash_bench(size_t len) {
    autd3_frame_t f;
    if (autd3_err_t e = autd3_frame_xor_hash_bench(&f, 0, len); e != AUTD3_OK) return detail::last_error(e);
    return Frame(f);
  }
  explicit Frame(const autd3_frame_t &f) noexcept : f_(f) {}
  const autd3_frame_t &raw() const noexcept { return f_; }
#if AUTD3_HPP_EXCEPTIONS
  static Frame broadcast(const Command &c) { return try_broadcast(c).value(); }
  template <class R, class P>
  static Frame xor_hash(std::chrono::duration<R, P> sleep, const std::vector<uint8_t> &data) { return try_xor_hash(sleep, data).value(); }
  static Frame xor_hash_bench(size_t len) { return try_xor_hash_bench(len).value(); }
#endif

 private:
  autd3_frame_t f_;
};

/** Owner of a heap-allocated autd3_frame_buffer_t (about 80 KB): one command per device. */
class FrameBuffer {
 public:
  FrameBuffer() : b_(new autd3_frame_buffer_t{}) {}
  FrameBuffer(FrameBuffer &&) noexcept = default;
  FrameBuffer &operator=(FrameBuffer &&) noexcept = default;
  FrameBuffer(const FrameBuffer &) = delete;
  FrameBuffer &operator=(const FrameBuffer &) = delete;
  Result<void> try_set(size_t dev, const Command &c) {
    if (!b_) return moved_from();
    return detail::check(autd3_frame_buffer_set(b_.get(), dev, &c.raw()));
  }
  Result<Frame> try_frame() const {
    if (!b_) return moved_from();
    autd3_frame_t f;
    if (autd3_err_t e = autd3_frame_buffer_frame(b_.get(), &f); e != AUTD3_OK) return detail::last_error(e);
    return Frame(f);
  }
  /** Devices set so far (0 for a moved-from buffer). */
  size_t num_devices() const noexcept { return b_ ? b_->num_devices : 0; }
  autd3_frame_buffer_t *get() noexcept { return b_.get(); }
#if AUTD3_HPP_EXCEPTIONS
  void set(size_t dev, const Command &c) { try_set(dev, c).value(); }
  Frame frame() const { return try_frame().value(); }
#endif

 private:
  static Error moved_from() { return Error{AUTD3_E_INVALID_ARGUMENT, "autd3::FrameBuffer: moved from", nullptr}; }
  std::unique_ptr<autd3_frame_buffer_t> b_;
};

/** A gain (value type); the frame it makes puts it on every device of a geometry. */
class Gain {
 public:
  static Gain null() noexcept { return Gain(autd3_gain_null()); }
  static Gain focus(float x, float y, float z) noexcept { return Gain(autd3_gain_focus(x, y, z)); }
  static Gain plane(float dx, float dy, float dz) noexcept { return Gain(autd3_gain_plane(dx, dy, dz)); }
  static Gain bessel(float x, float y, float z, float dx, float dy, float dz, float theta) noexcept {
    return Gain(autd3_gain_bessel(x, y, z, dx, dy, dz, theta));
  }
  static Gain uniform(uint8_t phase, uint8_t intensity) noexcept { return Gain(autd3_gain_uniform(phase, intensity)); }
  Gain &intensity(uint8_t i) noexcept { g_.intensity = i; return *this; }
  Gain &phase_offset(uint8_t p) noexcept { g_.phase_offset = p; return *this; }
  const autd3_gain_t &raw() const noexcept { return g_; }
  Result<std::array<Drive, AUTD3_NUM_TRANSDUCERS>> try_calc(const Geometry &geo, size_t dev) const {
    std::array<Drive, AUTD3_NUM_TRANSDUCERS> d{};
    if (autd3_err_t e = autd3_gain_calc(&g_, geo.get(), dev, d.data()); e != AUTD3_OK) return detail::last_error(e);
    return d;
  }
  /** The frame (points into `buf`). */
  Result<Frame> try_frame(const Geometry &geo, FrameBuffer &buf) const {
    autd3_frame_t f;
    if (autd3_err_t e = autd3_gain_frame(&g_, geo.get(), buf.get(), &f); e != AUTD3_OK) return detail::last_error(e);
    return Frame(f);
  }
#if AUTD3_HPP_EXCEPTIONS
  std::array<Drive, AUTD3_NUM_TRANSDUCERS> calc(const Geometry &geo, size_t dev) const { return try_calc(geo, dev).value(); }
  Frame frame(const Geometry &geo, FrameBuffer &buf) const { return try_frame(geo, buf).value(); }
#endif

 private:
  explicit Gain(const autd3_gain_t &g) noexcept : g_(g) {}
  autd3_gain_t g_;
};

}  // namespace autd3

#endif /* AUTD3_CPP_COMMAND_HPP */
