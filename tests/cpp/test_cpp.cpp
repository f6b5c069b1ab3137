/* Every call of the C++ binding (include/autd3/autd3.hpp) against the in-process emulator: the try_ forms
 * always, the throwing forms when the TU has exceptions (the same file is built with -fno-exceptions too).
 * Each check names what failed; the error paths first assert that the error happened (its code). */
#include <autd3/autd3.hpp>

#include <cstdio>
#include <cstring>
#include <thread>

namespace {
int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)
/* A Result that must hold a value: its error is printed if not. */
#define OK(r) ok_((r), #r, __LINE__)
template <class R>
bool ok_(const R &r, const char *what, int line) {
  if (r) return true;
  std::fprintf(stderr, "line %d: %s: %s: %s\n", line, what, r.error().name(), r.error().message.c_str());
  failures++;
  return false;
}

using namespace std::chrono_literals;

void names() {
  CHECK(autd3::version() == AUTD3_VERSION_HEX);
  const std::string want = std::to_string(AUTD3_VERSION_MAJOR) + "." + std::to_string(AUTD3_VERSION_MINOR) + "." +
                           std::to_string(AUTD3_VERSION_PATCH);
  CHECK(want == autd3::version_string()); /* the library linked is the headers' */
  CHECK(std::strcmp(autd3::err_name(AUTD3_E_TIMEOUT), "TIMEOUT") == 0);
  CHECK(std::strcmp(autd3::strerror(AUTD3_E_TIMEOUT), "timed out") == 0);
  CHECK(std::strcmp(autd3::cmd_name(AUTD3_CMD_CLEAR), "CLEAR") == 0);
  CHECK(autd3::dev_err_message(AUTD3_DEV_ERR_INVALID_DATA)[0] != '\0');
  CHECK(std::strcmp(autd3::link_kind_name(autd3::LinkKind::Echocat), "echocat") == 0);
  CHECK(autd3::link_kind_available(autd3::LinkKind::Emulator));
  auto k = autd3::try_link_kind_parse("remote");
  if (OK(k)) CHECK(*k == autd3::LinkKind::Remote);
  auto bad = autd3::try_link_kind_parse("carrier-pigeon");
  CHECK(!bad && bad.code() == AUTD3_E_UNKNOWN_LINK && !bad.error().message.empty());
  CHECK(autd3::timing_model_ideal().fifo_latency_ns == 0);
  CHECK(autd3::timing_model_pessimistic().fifo_latency_ns == 900000);
  CHECK(autd3::timing_model_default().take_on_sync0);
  auto t = autd3::try_timing_model_parse("take=arrival,fifo=5000,ll=100,publish=now");
  if (OK(t)) CHECK(t->fifo_latency_ns == 5000 && !t->take_on_sync0);
  CHECK(!autd3::try_timing_model_parse("sometimes"));
}

void geometry() {
  auto none = autd3::Geometry::try_create(0);
  CHECK(!none && none.code() == AUTD3_E_DEVICE_COUNT_RANGE);
  auto g = autd3::Geometry::try_create({autd3::pose_at(0, 0, 0), autd3::pose_at(200, 0, 0)});
  if (!OK(g)) return;
  CHECK(g->num_devices() == 2 && g->num_transducers(1) == 249 && g->num_transducers(2) == 0);
  auto tr = g->try_transducer(1, 0);
  if (OK(tr)) CHECK(tr->pos[0] == 200.0f && tr->dir[2] == 1.0f);
  CHECK(g->try_transducer(5, 0).code() == AUTD3_E_INVALID_ARGUMENT);
  CHECK(g->sound_speed() == AUTD3_SOUND_SPEED_DEFAULT_MM_S);
  CHECK(OK(g->try_set_sound_speed(343000.0f)) && g->sound_speed() == 343000.0f);
  CHECK(g->try_set_sound_speed(-1.0f).code() == AUTD3_E_INVALID_ARGUMENT);
  autd3::Geometry moved = std::move(*g);
  CHECK(moved.num_devices() == 2 && g->get() == nullptr);
}

void options() {
  auto ec = autd3::LinkOption::echocat("eth7").sync0_period(500us).sync0_shift(-10us).send_cycle(1ms).sync_tolerance(2us)
                .sync_timeout(3s).state_timeout(4s).capture_path("/dev/null");
  autd3::LinkOption copy = ec; /* strings owned: the copy's C option points into the copy */
  autd3_link_option_t c = copy.c_option();
  CHECK(c.kind == AUTD3_LINK_ECHOCAT && std::strcmp(c.u.echocat.ethercat.adapter, "eth7") == 0);
  CHECK(c.u.echocat.ethercat.sync0_period_ns == 500000 && c.u.echocat.ethercat.sync0_shift_ns == -10000);
  CHECK(c.u.echocat.ethercat.send_cycle_ns == 1000000 && c.u.echocat.ethercat.sync_tolerance_ns == 2000);
  CHECK(c.u.echocat.ethercat.sync_timeout_ms == 3000 && c.u.echocat.ethercat.state_timeout_ms == 4000);
  CHECK(std::strcmp(c.u.echocat.ethercat.capture_path, "/dev/null") == 0);
  CHECK(c.size == autd3_link_option_default(AUTD3_LINK_ECHOCAT).size);
  auto ec_auto = autd3::LinkOption::echocat();
  CHECK(ec_auto.c_option().u.echocat.ethercat.adapter == nullptr);
  CHECK(autd3::LinkOption::soem("x").kind() == autd3::LinkKind::Soem);
  auto crab = autd3::LinkOption::ethercrab("x");
  CHECK(crab.c_option().u.ethercrab.pdu_timeout_ms == 100);
  /* c_option() points into its LinkOption: a temporary's is a compile error (deleted && overload). */
  auto ro = autd3::LinkOption::remote("10.0.0.1:9000");
  ro.timeout(250ms);
  auto r = ro.c_option();
  CHECK(std::strcmp(r.u.remote.address, "10.0.0.1:9000") == 0 && r.u.remote.timeout_ms == 250);
  auto tco = autd3::LinkOption::twincat();
  tco.server_ip("10.1.1.1").server_ams_net_id("1.2.3.4.1.1").client_ams_net_id("5.6.7.8.1.1").timeout(2s);
  auto tc = tco.c_option();
  CHECK(std::strcmp(tc.u.twincat.server_ip, "10.1.1.1") == 0 && std::strcmp(tc.u.twincat.client_ams_net_id, "5.6.7.8.1.1") == 0);
  CHECK(std::strcmp(tc.u.twincat.server_ams_net_id, "1.2.3.4.1.1") == 0 && tc.u.twincat.timeout_ms == 2000);
  auto tc_local = autd3::LinkOption::twincat();
  CHECK(tc_local.c_option().u.twincat.server_ip == nullptr);
  auto emu = autd3::LinkOption::emulator().cycle(500us).timing(autd3::timing_model_ideal()).firmware_version({1, 2, 3, 4, 5, 6});
  CHECK(emu.c_option().u.emulator.cycle_ns == 500000 && emu.c_option().u.emulator.version.fpga_patch == 6);
  emu.raw().u.emulator.firmware = AUTD3_EMU_FIRMWARE_NEW;

  autd3::ClientConfig cfg;
  CHECK(cfg.raw().size == sizeof(autd3_client_config_t) && cfg.raw().max_inflight == 127 && cfg.raw().close_timeout_ms == 1000);
  cfg.timeout_cycles(5).max_inflight(8).max_resync_rounds(2).low_latency(true).reset_resend_cycles(3).rt_priority(0).rt_cpu(-1)
      .require_supported_firmware(true).close_timeout(1500ms).protocol(autd3::Protocol::New);
  CHECK(OK(cfg.try_validate()) && cfg.raw().close_timeout_ms == 1500 && cfg.raw().low_latency);
  CHECK(autd3::ClientConfig().max_inflight(0).try_validate().code() == AUTD3_E_INVALID_CONFIG);
}

void commands(const autd3::Geometry &geo) {
  CHECK(OK(autd3::Command::try_silencer_default()));
  CHECK(OK(autd3::Command::try_silencer_disable()));
  auto s = autd3::Command::try_silencer_fixed_completion_time(250us, 1ms, true);
  if (OK(s)) CHECK(s->opcode() == AUTD3_CMD_SET_SILENCER);
  CHECK(autd3::Command::try_silencer_fixed_completion_time(10us, 1ms).code() == AUTD3_E_INVALID_ARGUMENT);
  CHECK(OK(autd3::Command::try_silencer_fixed_update_rate(256, 256)));
  CHECK(autd3::Command::try_silencer_fixed_update_rate(0, 0).code() == AUTD3_E_INVALID_ARGUMENT);
  std::vector<autd3::Drive> drives(249, autd3::Drive{0x10, 0xFF});
  CHECK(OK(autd3::Command::try_write_pattern(0, 0, drives)));
  CHECK(OK(autd3::Command::try_config_pattern(0, 10, 2, AUTD3_LOOP_INFINITE)));
  CHECK(OK(autd3::Command::try_change_pattern_bank(1, autd3::Transition::immediate())));
  CHECK(OK(autd3::Command::try_change_pattern_bank(1, autd3::Transition::ext())));
  CHECK(autd3::Transition::sync_idx().t.mode == AUTD3_TRANSITION_SYNC_IDX && autd3::Transition::gpio(2).t.value == 2);
  CHECK(autd3::Transition::sys_time(2s).t.value == 2000000000u);
  std::array<autd3::Drive, 249> fused{};
  CHECK(OK(autd3::Command::try_write_pattern_fused(0, fused, 0xFFFF)));
  CHECK(autd3::Command::try_write_pattern_fused(0, fused, 0).code() == AUTD3_E_INVALID_ARGUMENT);
  std::vector<uint8_t> phases(2 * 249, 7);
  CHECK(OK(autd3::Command::try_write_pattern_compressed(0, 0, AUTD3_PATTERN_PHASE_FULL, phases)));
  CHECK(OK(autd3::Command::try_phase_correction(std::array<uint8_t, 249>{})));
  std::array<bool, 249> mask{};
  mask.fill(true);
  CHECK(OK(autd3::Command::try_output_mask(mask)));
  CHECK(OK(autd3::Command::try_write_modulation(0, 0, std::vector<uint8_t>(100, 255))));
  CHECK(OK(autd3::Command::try_config_modulation(0, 10, 100, AUTD3_LOOP_INFINITE)));
  CHECK(OK(autd3::Command::try_change_modulation_bank(0, autd3::Transition::immediate())));
  CHECK(OK(autd3::Command::try_write_modulation_fused(0, std::vector<uint8_t>(10, 128), 10, AUTD3_LOOP_INFINITE)));
  auto table = autd3::pulse_width_table_default();
  CHECK(table[255] == 256 && table[0] == 0);
  CHECK(OK(autd3::Command::try_pulse_width_table(table)));
  table[3] = 600;
  CHECK(autd3::Command::try_pulse_width_table(table).code() == AUTD3_E_INVALID_ARGUMENT);
  CHECK(OK(autd3::Command::try_force_fan(true)));
  CHECK(OK(autd3::Command::try_emulate_gpio_in({true, false, false, false})));
  std::array<autd3::GpioOut, 4> gpio{};
  gpio[0].type = AUTD3_GPIO_OUT_BASE_SIGNAL;
  CHECK(OK(autd3::Command::try_gpio_out(gpio)));

  auto sine = autd3::Modulation::try_sine(150.0f);
  if (OK(sine)) {
    CHECK(sine->samples().size() > 2 && sine->divider() == 10);
    auto cmds = sine->try_commands();
    if (OK(cmds)) CHECK(!cmds->empty());
  }
  CHECK(autd3::Modulation::try_sine(30000.0f).code() == AUTD3_E_INVALID_ARGUMENT);
  auto st = autd3::Modulation::try_static(200);
  if (OK(st)) CHECK(st->samples().size() == 2 && st->samples()[0] == 200);
  auto big = autd3::Modulation::custom(std::vector<uint8_t>(2000, 255), 40).bank(1).rep(AUTD3_LOOP_INFINITE)
                 .transition(autd3::Transition::immediate()).later(false);
  auto bc = big.try_commands();
  if (OK(bc)) CHECK(bc->size() == 6); /* 616 × 3 + 152: four buffer writes, config, change */
  CHECK(autd3::Modulation::custom({1}, 10).try_commands().code() == AUTD3_E_INVALID_ARGUMENT);

  autd3::PatternStm pstm;
  pstm.drives.assign(3 * 249, autd3::Drive{1, 255});
  pstm.divider = 40;
  auto pc = pstm.try_commands();
  if (OK(pc)) CHECK(pc->size() == 5); /* 3 writes, config, change */
  pstm.drives.resize(249);
  CHECK(pstm.try_commands().code() == AUTD3_E_INVALID_ARGUMENT);
  autd3::FociStm fstm;
  fstm.points = {{{0, 0, 150}, 0}, {{10, 0, 150}, 0}};
  fstm.divider = 40;
  auto fc = fstm.try_commands(geo, 0);
  if (OK(fc)) CHECK(fc->size() == 1); /* fits one fused frame */
  fstm.points[1].pos[0] = 1e7f;
  CHECK(fstm.try_commands(geo, 0).code() == AUTD3_E_INVALID_ARGUMENT);

  CHECK(autd3::Frame::simple(AUTD3_CMD_NOP).raw().cmd == AUTD3_CMD_NOP);
  CHECK(autd3::Frame::set_mode(AUTD3_MODE_LOW_LATENCY).raw().payload[0] == 1);
  auto fb = autd3::Frame::try_broadcast(*s);
  if (OK(fb)) CHECK(fb->raw().device_cmds == nullptr && fb->raw().cmd == AUTD3_CMD_SET_SILENCER);
  CHECK(OK(autd3::Frame::try_xor_hash(0ms, std::vector<uint8_t>{1, 1})));
  CHECK(autd3::Frame::try_xor_hash(0ms, std::vector<uint8_t>(700)).code() == AUTD3_E_PAYLOAD);
  CHECK(OK(autd3::Frame::try_xor_hash_bench(64)));

  autd3::FrameBuffer buf;
  CHECK(OK(buf.try_set(0, *s)) && OK(buf.try_set(1, *s)) && buf.num_devices() == 2);
  auto ff = buf.try_frame();
  if (OK(ff)) CHECK(ff->raw().device_cmds != nullptr);
  CHECK(buf.try_set(AUTD3_MAX_DEVICES, *s).code() == AUTD3_E_INVALID_ARGUMENT);
  autd3::FrameBuffer moved = std::move(buf);
  CHECK(moved.num_devices() == 2);
  /* A moved-from buffer is empty, not a null dereference. */
  CHECK(buf.num_devices() == 0 && buf.try_set(0, *s).code() == AUTD3_E_INVALID_ARGUMENT && !buf.try_frame()); // NOLINT(bugprone-use-after-move)
  /* XorHash's sleep is a 16-bit field of ms: longer is an error, never a truncation. */
  CHECK(autd3::Frame::try_xor_hash(66s, std::vector<uint8_t>{1, 1}).code() == AUTD3_E_INVALID_ARGUMENT);

  auto focus = autd3::Gain::focus(90, 70, 150).intensity(200).phase_offset(3);
  CHECK(focus.raw().kind == AUTD3_GAIN_FOCUS && focus.raw().intensity == 200);
  auto d = focus.try_calc(geo, 1);
  if (OK(d)) CHECK((*d)[0].intensity == 200);
  CHECK(focus.try_calc(geo, 9).code() == AUTD3_E_INVALID_ARGUMENT);
  CHECK(OK(autd3::Gain::null().try_calc(geo, 0)));
  CHECK(OK(autd3::Gain::plane(0, 0, 1).try_calc(geo, 0)));
  CHECK(OK(autd3::Gain::bessel(90, 70, 0, 0, 0, 1, 0.3f).try_calc(geo, 0)));
  CHECK(autd3::Gain::plane(0, 0, 0).try_calc(geo, 0).code() == AUTD3_E_INVALID_ARGUMENT);
  auto uni = autd3::Gain::uniform(10, 20).try_calc(geo, 0);
  if (OK(uni)) CHECK((*uni)[100].phase == 10 && (*uni)[100].intensity == 20);
  CHECK(OK(focus.try_frame(geo, moved)));
}

/* The client, requests and per-device outcomes, the link view and the emulator. */
void client() {
  auto geo = autd3::Geometry::try_create(2);
  if (!OK(geo)) return;
  auto cl = autd3::Client::try_open(*geo, autd3::LinkOption::emulator(), autd3::ClientConfig().timeout_cycles(3).max_resync_rounds(1));
  if (!OK(cl)) return;
  autd3::Client c = std::move(*cl);
  CHECK(c.is_open() && c.num_devices() == 2 && c.protocol() == autd3::Protocol::New);
  auto outs = c.link().try_outputs();
  if (!OK(outs)) return;

  auto fw = c.try_firmware_versions();
  if (OK(fw)) CHECK(fw->size() == 2 && (*fw)[1].cpu_minor == 9);
  auto det = c.try_error_details();
  if (OK(det)) CHECK(det->size() == 2 && (*det)[0] == 0);
  auto fpga = c.try_fpga_states();
  if (OK(fpga)) CHECK(fpga->size() == 2);

  autd3::FrameBuffer buf;
  auto frame = autd3::Gain::focus(90, 70, 150).try_frame(*geo, buf);
  if (!OK(frame)) return;
  auto resp = c.try_send_checked(*frame);
  if (OK(resp)) CHECK(resp->all_executed() && resp->num_devices() == 2 && resp->outcome(1) == autd3::Outcome::Executed);
  if (resp) CHECK(OK(resp->try_check()) && resp->data(0) == 0 && resp->outcome(7) == autd3::Outcome::None);
  auto out = c.link().try_output(1);
  if (OK(out)) CHECK(out->intensity[17] == 255);

  /* A device error: XorHash whose data does not XOR to 0 → INVALID_DATA in device data bytes. */
  auto xh = autd3::Frame::try_xor_hash(0ms, std::vector<uint8_t>{1, 2});
  if (OK(xh)) {
    auto bad = c.try_send_checked(*xh);
    CHECK(!bad && bad.code() == AUTD3_E_DEVICE && bad.error().message.find("device") != std::string::npos);
    if (!bad) {
      CHECK(bad.error().response != nullptr);
      if (bad.error().response) CHECK(bad.error().response->data(0) == AUTD3_DEV_ERR_INVALID_DATA);
    }
  }

  /* Streaming: wait, wait_for, poll, detach, fire and forget; a handle used twice. */
  auto nop = autd3::Frame::simple(AUTD3_CMD_NOP);
  auto r1 = c.try_send(nop);
  if (OK(r1)) {
    auto w = r1->try_wait();
    if (OK(w)) CHECK(w->all_executed());
    CHECK(!r1->valid() && r1->try_wait().code() == AUTD3_E_INVALID_HANDLE);
  }
  auto r2 = c.try_send(nop);
  if (OK(r2)) {
    auto w = r2->try_wait_for(5s);
    if (OK(w)) CHECK(w->has_value() && (*w)->all_executed());
  }
  auto r3 = c.try_send(nop);
  if (OK(r3)) {
    std::optional<autd3::Response> got;
    for (int i = 0; i < 5000 && !got; i++) {
      auto p = r3->try_poll();
      if (!OK(p)) break;
      got = *p;
      if (!got) std::this_thread::sleep_for(1ms);
    }
    CHECK(got.has_value() && got->all_executed());
  }
  auto r4 = c.try_send(nop);
  if (OK(r4)) CHECK(OK(r4->try_detach()) && r4->try_detach().code() == AUTD3_E_INVALID_HANDLE);
  { auto r5 = c.try_send(nop); CHECK(OK(r5)); } /* destroyed: detached */
  CHECK(OK(c.try_send_detached(nop)));

  /* Per-device outcomes of a failed request: device 1 frozen never acks → TIMEOUT naming it, device 0 executed. */
  autd3::LinkRef link = c.link();
  CHECK(link.kind() == autd3::LinkKind::Emulator && link.num_devices() == 2);
  autd3::DeviceFault freeze{};
  freeze.freeze = true;
  CHECK(OK(link.try_inject(1, freeze)));
  auto rf = c.try_send(nop);
  if (OK(rf)) {
    auto w = rf->try_wait();
    /* The frozen device never confirms the client's Reset either: OUTCOME_UNKNOWN (or TIMEOUT), naming it. */
    CHECK(!w && (w.code() == AUTD3_E_TIMEOUT || w.code() == AUTD3_E_OUTCOME_UNKNOWN) && w.error().message.find("device 1") != std::string::npos);
    if (!w && w.error().response) {
      CHECK(w.error().response->outcome(0) == autd3::Outcome::Executed);
      CHECK(w.error().response->outcome(1) != autd3::Outcome::Executed);
    } else {
      CHECK(!"a failed request carries its per-device outcomes");
    }
  }
  CHECK(OK(link.try_inject(1, autd3::DeviceFault{})));
  std::this_thread::sleep_for(200ms); /* let the client re-establish device 1 */

  auto st = c.stats();
  CHECK(st.sent > 0 && st.completed > 0 && st.failed >= 1);
  auto ds = c.try_device_status(0);
  if (OK(ds)) CHECK(ds->state == AUTD3_CLIENT_DEVICE_READY);
  CHECK(c.try_device_status(7).code() == AUTD3_E_INVALID_ARGUMENT);
  (void)c.device_resets(1);
  CHECK(link.stats().cycles > 0 && link.device_resets(0) == 0);
  auto cs = link.try_check_state();
  if (OK(cs)) CHECK(cs->num_devices == 2);
  (void)link.diagnostics();
  auto cnt = link.try_counters(0);
  if (OK(cnt)) CHECK(cnt->executed > 0);
  CHECK(link.try_counters(9).code() == AUTD3_E_INVALID_ARGUMENT);
  auto log = link.try_log_drain(0, 64);
  if (OK(log)) CHECK(!log->empty());
  CHECK(OK(link.try_power_cycle(0)));

  auto closed = c.try_close();
  CHECK(!c.is_open());
  (void)closed; /* a device power-cycled just before close may or may not confirm in time */
  auto after = outs->try_read(1);
  if (OK(after)) CHECK(after->intensity[17] == 0); /* close silenced it */
  CHECK(c.try_send(nop).code() != AUTD3_OK);        /* a closed (moved-from handle) client refuses */
}

/* The Client destructor alone (no close()) silences every device: the emulator's outputs, which outlive the
 * link, read zero intensity afterwards. */
void destructor_silences() {
  auto geo = autd3::Geometry::try_create(2);
  if (!OK(geo)) return;
  std::optional<autd3::EmulatorOutputs> outs;
  {
    auto cl = autd3::Client::try_open(*geo, autd3::LinkOption::emulator());
    if (!OK(cl)) return;
    auto o = cl->link().try_outputs();
    if (!OK(o)) return;
    outs.emplace(std::move(*o));
    autd3::FrameBuffer buf;
    auto frame = autd3::Gain::focus(90, 70, 150).try_frame(*geo, buf);
    if (!OK(frame) || !OK(cl->try_send_checked(*frame))) return;
    auto before = outs->try_read(0);
    if (OK(before)) CHECK(before->intensity[17] == 255); /* emitting: the check below can fail */
  } /* ~Client */
  for (uint16_t dev = 0; dev < 2; dev++) {
    auto after = outs->try_read(dev);
    if (OK(after)) CHECK(after->intensity[17] == 0);
  }
}

void raw_link() {
  auto geo = autd3::Geometry::try_create(1);
  if (!OK(geo)) return;
  auto l = autd3::Link::try_open(autd3::LinkOption::emulator(), *geo);
  if (!OK(l)) return;
  std::vector<uint8_t> tx(AUTD3_TX_FRAME_BYTES), rx;
  CHECK(OK(l->try_wait_next_cycle()));
  bool fresh = false;
  for (int i = 0; i < 10; i++) {
    auto v = l->try_cycle(tx, rx);
    if (!OK(v)) break;
    fresh = fresh || *v;
  }
  CHECK(fresh && rx.size() == 2);
  std::vector<uint8_t> short_tx(10);
  CHECK(l->try_cycle(short_tx, rx).code() == AUTD3_E_INVALID_ARGUMENT);
  CHECK(l->view().stats().cycles >= 10);
}

#if AUTD3_HPP_EXCEPTIONS
void throwing() {
  bool caught = false;
  try {
    (void)autd3::Geometry::create(0);
  } catch (const autd3::Exception &e) {
    caught = e.code() == AUTD3_E_DEVICE_COUNT_RANGE && std::string(e.what()).rfind("DEVICE_COUNT_RANGE: ", 0) == 0;
  }
  CHECK(caught);
  auto geo = autd3::Geometry::create(2);
  geo.set_sound_speed(340000.0f);
  CHECK(geo.transducer(0, 0).pos[0] == 0.0f);
  auto c = autd3::Client::open(geo, autd3::LinkOption::emulator());
  auto outs = c.link().outputs();
  c.send_checked(autd3::Frame::broadcast(autd3::Command::silencer_default()));
  c.send_checked(autd3::Frame::broadcast(autd3::Command::silencer_fixed_completion_time(25us, 25us, false)));
  c.send_checked(autd3::Frame::broadcast(autd3::Command::silencer_disable()));
  for (const auto &cmd : autd3::Modulation::sine(150.0f).commands()) c.send_checked(autd3::Frame::broadcast(cmd));
  autd3::FrameBuffer buf;
  buf.set(0, autd3::Command::force_fan(false));
  buf.set(1, autd3::Command::force_fan(true));
  c.send_checked(buf.frame());
  auto req = c.send(autd3::Gain::focus(90, 70, 150).frame(geo, buf));
  CHECK(req.wait().all_executed());
  auto r2 = c.send(autd3::Frame::simple(AUTD3_CMD_NOP));
  auto w = r2.wait_for(5s);
  CHECK(w && w->all_executed());
  auto r3 = c.send(autd3::Frame::simple(AUTD3_CMD_NOP));
  while (!r3.poll()) std::this_thread::sleep_for(1ms);
  CHECK(c.firmware_versions().size() == 2 && c.link().output(1).intensity[0] == 255);
  caught = false;
  try {
    (void)c.send_checked(*autd3::Frame::try_xor_hash(0ms, std::vector<uint8_t>{1, 2}));
  } catch (const autd3::Exception &e) {
    caught = e.code() == AUTD3_E_DEVICE && e.error().response && e.error().response->data(1) == AUTD3_DEV_ERR_INVALID_DATA;
  }
  CHECK(caught);
  caught = false;
  try {
    (void)autd3::Result<int>(autd3::Error{AUTD3_E_BUSY, "x", nullptr}).value();
  } catch (const autd3::Exception &e) {
    caught = e.code() == AUTD3_E_BUSY;
  }
  CHECK(caught);
  /* The throwing twins of the remaining try_ calls (twins.sh checks that each exists). */
  CHECK(autd3::link_kind_parse("soem") == autd3::LinkKind::Soem);
  CHECK(autd3::timing_model_parse("take=arrival").take_on_sync0 == false);
  autd3::ClientConfig().validate();
  std::vector<autd3::Drive> drives(249, autd3::Drive{0x10, 0xFF});
  std::array<autd3::Drive, 249> fused{};
  std::array<bool, 249> mask{};
  mask.fill(true);
  std::vector<autd3::Command> cmds{
      autd3::Command::silencer_fixed_update_rate(256, 256), autd3::Command::write_pattern(0, 0, drives),
      autd3::Command::config_pattern(0, 10, 1, AUTD3_LOOP_INFINITE), autd3::Command::change_pattern_bank(0, autd3::Transition::immediate()),
      autd3::Command::write_pattern_fused(0, fused, 0xFFFF),
      autd3::Command::write_pattern_compressed(0, 0, AUTD3_PATTERN_PHASE_FULL, std::vector<uint8_t>(249, 1)),
      autd3::Command::phase_correction(std::array<uint8_t, 249>{}), autd3::Command::output_mask(mask),
      autd3::Command::write_modulation(0, 0, std::vector<uint8_t>(10, 255)), autd3::Command::config_modulation(0, 10, 10, AUTD3_LOOP_INFINITE),
      autd3::Command::change_modulation_bank(0, autd3::Transition::immediate()),
      autd3::Command::write_modulation_fused(0, std::vector<uint8_t>(10, 128), 10, AUTD3_LOOP_INFINITE),
      autd3::Command::pulse_width_table(autd3::pulse_width_table_default()), autd3::Command::emulate_gpio_in({false, false, false, false}),
      autd3::Command::gpio_out(std::array<autd3::GpioOut, 4>{})};
  CHECK(cmds.size() == 15 && cmds[1].opcode() != cmds[0].opcode());
  CHECK(autd3::Modulation::static_(100).samples()[0] == 100);
  autd3::PatternStm pstm;
  pstm.drives.assign(2 * 249, autd3::Drive{1, 255});
  CHECK(!pstm.commands().empty());
  autd3::FociStm fstm;
  fstm.points = {{{0, 0, 150}, 0}, {{10, 0, 150}, 0}};
  CHECK(!fstm.commands(geo, 0).empty());
  CHECK(autd3::Gain::focus(90, 70, 150).calc(geo, 1)[0].intensity == 255);
  (void)autd3::Frame::xor_hash_bench(64);
  c.send_checked(autd3::Frame::xor_hash(0ms, std::vector<uint8_t>{1, 1})).check();
  auto r4 = c.send(autd3::Frame::simple(AUTD3_CMD_NOP));
  r4.detach();
  caught = false;
  try {
    r4.detach(); /* a handle used twice */
  } catch (const autd3::Exception &e) {
    caught = e.code() == AUTD3_E_INVALID_HANDLE;
  }
  CHECK(caught);
  c.send_detached(autd3::Frame::simple(AUTD3_CMD_NOP));
  CHECK(c.error_details().size() == 2 && c.fpga_states().size() == 2);
  CHECK(c.device_status(0).state == AUTD3_CLIENT_DEVICE_READY);
  autd3::LinkRef link = c.link();
  CHECK(link.check_state().num_devices == 2 && link.counters(0).executed > 0 && !link.log_drain(0, 8).empty());
  link.inject(1, autd3::DeviceFault{});
  caught = false;
  try {
    (void)link.counters(9);
  } catch (const autd3::Exception &e) {
    caught = e.code() == AUTD3_E_INVALID_ARGUMENT;
  }
  CHECK(caught);
  c.close();
  CHECK(outs.read(1).intensity[0] == 0);
  auto one = autd3::Geometry::create(1);
  auto raw = autd3::Link::open(autd3::LinkOption::emulator(), one);
  raw.wait_next_cycle();
  std::vector<uint8_t> tx(AUTD3_TX_FRAME_BYTES), rx;
  (void)raw.cycle(tx, rx);
  CHECK(rx.size() == AUTD3_RX_FRAME_BYTES);
  raw.view().power_cycle(0);
}
#endif
}  // namespace

int main() {
  names();
  geometry();
  options();
  {
    auto geo = autd3::Geometry::try_create(2);
    if (OK(geo)) commands(*geo);
  }
  client();
  destructor_silences();
  raw_link();
#if AUTD3_HPP_EXCEPTIONS
  try {
    throwing();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    failures++;
  }
  std::printf("test_cpp: exceptions\n");
#else
  std::printf("test_cpp: no exceptions\n");
#endif
  if (failures != 0) std::fprintf(stderr, "test_cpp: %d checks failed\n", failures);
  else std::printf("test_cpp: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
