/*
 * The emulator's control commands (server_internal.h; the list and their
 * replies: docs/emulator.md "Control socket"). One line in, one line out:
 * "ok ..." or "err ...". Numbers are parsed as on the command line
 * (tools/common/numopt.h: the whole argument, inside its range).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "emulation/ethercat/server_internal.h"
#include "numopt.h"
#include "platform/platform.h"

/* A whole decimal number in [0, max], or -1 (the shared option parser). */
static long index_arg(const char *s, long max) {
  char err[128];
  uint64_t v;
  return autd3_numopt_u64("", s, 0, (uint64_t)max, &v, err, sizeof err) ? (long)v : -1;
}

/* "log K": drain up to LOG_BATCH entries of device K's execution log into one line,
 *   ok log K dropped D more 0|1 n N INDEX:BOOT:SEQ:CMD:RESULT:TAG ...
 * (INDEX, BOOT, D decimal; SEQ, CMD, RESULT two hex digits; TAG eight hex digits).
 * "more 1" = entries remain: ask again. Events due by now run first, when no
 * frame is queued (see tick_if_drained). */
static void log_reply(autd3_emu_server_t *s, uint16_t k, char *reply, size_t cap) {
  autd3_exec_entry_t *ent = s->ent;
  autd3__emu_server_tick_if_drained(s);
  uint64_t dropped = 0;
  autd3_exec_log_t *lg = &s->emu->esc[k].fw.log;
  size_t cnt = autd3_exec_log_drain(lg, ent, AUTD3_EMU_SERVER_LOG_BATCH, &dropped);
  bool more = atomic_load(&lg->head) != atomic_load(&lg->tail);
  int w = snprintf(reply, cap, "ok log %u dropped %llu more %d n %zu", (unsigned)k, (unsigned long long)dropped,
                   more ? 1 : 0, cnt);
  size_t len = w > 0 ? (size_t)w : 0;
  for (size_t i = 0; i < cnt && len < cap; i++) {
    w = snprintf(reply + len, cap - len, " %u:%u:%02x:%02x:%02x:%08x", (unsigned)ent[i].index, (unsigned)ent[i].boot,
                 ent[i].seq, ent[i].cmd, ent[i].result, (unsigned)ent[i].tag);
    if (w < 0) break;
    len += (size_t)w;
  }
}

/* "errors K KIND [P] N": N errors of KIND (crc, phy, fwd, lost-link with a
 * port P 0..3; pu, pdi without) into device K's ESC error counters;
 * "errors K" reads them back (docs/emulator.md "Error counters"). */
static void errors_cmd(autd3_emu_t *emu, const char *line, char *reply, size_t cap) {
  static const struct { const char *name; autd3_emu_err_kind_t kind; bool port; } kinds[] = {
      {"crc", AUTD3_EMU_ERR_CRC, true}, {"phy", AUTD3_EMU_ERR_PHY, true},      {"fwd", AUTD3_EMU_ERR_FWD, true},
      {"pu", AUTD3_EMU_ERR_PU, false},  {"pdi", AUTD3_EMU_ERR_PDI, false},     {"lost-link", AUTD3_EMU_ERR_LOST_LINK, true}};
  char dev[24] = "", kind[24] = "", a1[24] = "", a2[24] = "";
  int n = sscanf(line, "%*s %23s %23s %23s %23s", dev, kind, a1, a2);
  long k = n >= 1 ? index_arg(dev, emu->cfg.devices - 1) : -1;
  if (k < 0) {
    snprintf(reply, cap, "err errors: device 0..%u, then crc|phy|fwd|lost-link P N or pu|pdi N", (unsigned)emu->cfg.devices - 1);
    return;
  }
  if (n == 1) { /* read back: the 20 bytes 0x0300-0x0313 in hex */
    const uint8_t *m = emu->esc[k].mem + 0x0300;
    int w = snprintf(reply, cap, "ok errors %ld ", k);
    for (int i = 0; i < 0x14 && w > 0 && (size_t)w + 3 < cap; i++) w += snprintf(reply + w, cap - (size_t)w, "%02x", m[i]);
    return;
  }
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    if (strcmp(kind, kinds[i].name)) continue;
    long port = 0, cnt = -1;
    if (kinds[i].port) {
      port = n == 4 ? index_arg(a1, 3) : -1;
      cnt = n == 4 ? index_arg(a2, 255) : -1;
    } else {
      cnt = n == 3 ? index_arg(a1, 255) : -1;
    }
    if (port < 0 || cnt < 0) {
      snprintf(reply, cap, "err errors %ld %s: %s", k, kind, kinds[i].port ? "port 0..3 then count 0..255" : "count 0..255");
      return;
    }
    autd3_emu_inject_errors(emu, (uint16_t)k, kinds[i].kind, (uint8_t)port, (uint32_t)cnt);
    snprintf(reply, cap, "ok errors %ld %s %ld %ld", k, kind, port, cnt);
    return;
  }
  snprintf(reply, cap, "err errors %ld %s: kinds crc, phy, fwd, lost-link (with a port), pu, pdi", k, kind);
}

/* "output K": device K's output state as of now (or the last tick, if frames are queued):
 *   ok dev K pattern bank B type T size S div D rep R pending P mod bank ... error E drives PPII...
 * then per transducer "PPII" (phase, intensity) in hex. */
static void output_reply(autd3_emu_server_t *s, uint16_t k, char *reply, size_t cap) {
  autd3__emu_server_tick_if_drained(s);
  autd3_output_state_t st;
  autd3_fw_dev_output_state(&s->emu->esc[k].fw, &st);
  int len = snprintf(reply, cap,
                     "ok dev %u pattern bank %u type %u size %u div %u rep %u pending %u mod bank %u size %u div %u rep %u "
                     "pending %u sample %u silencer flag %u rate %u %u steps %u %u fpga 0x%02x error 0x%02x drives ",
                     (unsigned)k, st.pattern_bank, st.pattern_emission_type, (unsigned)st.pattern_size, st.pattern_divider, st.pattern_rep,
                     st.transition_pending, st.modulation_bank, (unsigned)st.modulation_size, st.modulation_divider,
                     st.modulation_rep, st.modulation_transition_pending, st.modulation, st.silencer_flag,
                     st.silencer_update_rate_intensity, st.silencer_update_rate_phase, st.silencer_completion_steps_intensity,
                     st.silencer_completion_steps_phase, st.fpga_state, st.error_detail);
  /* then per transducer "PPII" (phase, intensity) in hex */
  for (int t = 0; t < AUTD3_OUTPUT_TRANSDUCERS && len > 0 && (size_t)len + 5 < cap; t++)
    len += snprintf(reply + len, cap - (size_t)len, "%02x%02x", st.phase[t], st.intensity[t]);
}

/* One control command; reply is written without the trailing newline. */
void autd3__emu_server_command(autd3_emu_server_t *s, char *line, char *reply, size_t cap) {
  char *nl = strpbrk(line, "\r\n");
  if (nl) *nl = 0;
  char cmd[32] = {0};
  char arg[64] = {0};
  int n = sscanf(line, "%31s %63s", cmd, arg);
  autd3_emu_t *emu = s->emu;
  uint64_t now = autd3__now_ns();
  if (n < 1) {
    snprintf(reply, cap, "err empty command");
  } else if (!strcmp(cmd, "status")) {
    char *buf = s->status;
    autd3__emu_server_tick_if_drained(s); /* else: as of the last tick (frames are queued) */
    size_t len = autd3_emu_status(emu, buf, sizeof s->status);
    while (len > 0 && buf[len - 1] == '\n') buf[--len] = 0;
    for (size_t i = 0; i < len; i++)
      if (buf[i] == '\n') buf[i] = ';';
    snprintf(reply, cap, "ok %s", buf);
  } else if (!strcmp(cmd, "unplug") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices);
    if (k < 0) snprintf(reply, cap, "err unplug %s: devices 0..%u", arg, (unsigned)emu->cfg.devices);
    else {
      autd3_emu_unplug(emu, (uint16_t)k);
      snprintf(reply, cap, "ok present %ld", k);
    }
  } else if (!strcmp(cmd, "replug")) {
    autd3_emu_replug(emu);
    snprintf(reply, cap, "ok present %u", (unsigned)emu->cfg.devices);
  } else if (!strcmp(cmd, "power-cycle") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err power-cycle %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else {
      autd3_emu_power_cycle(emu, (uint16_t)k, now);
      snprintf(reply, cap, "ok device %ld in INIT", k);
    }
  } else if ((!strcmp(cmd, "drop") || !strcmp(cmd, "corrupt")) && n == 2) {
    char err[128];
    double p = 0;
    if (!autd3_numopt_f64(cmd, arg, 0, 1, &p, err, sizeof err)) snprintf(reply, cap, "err %s %s: fraction 0..1", cmd, arg);
    else {
      if (cmd[0] == 'd') emu->faults.drop = p;
      else emu->faults.corrupt = p;
      snprintf(reply, cap, "ok %s %g", cmd, p);
    }
  } else if (!strcmp(cmd, "delay") && n == 2) {
    long us = index_arg(arg, 10000000);
    if (us < 0) snprintf(reply, cap, "err delay %s: 0..10000000 us", arg);
    else {
      s->delay_us = (uint32_t)us;
      snprintf(reply, cap, "ok delay %ld", us);
    }
  } else if (!strcmp(cmd, "silence") && n == 2 && (arg[0] == '0' || arg[0] == '1') && !arg[1]) {
    emu->faults.silence = arg[0] == '1';
    snprintf(reply, cap, "ok silence %c", arg[0]);
  } else if ((!strcmp(cmd, "mute") || !strcmp(cmd, "unmute")) && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    char after[16] = {0}, count[16] = {0};
    int extra = sscanf(line, "%*s %*s %15s %15s", after, count);
    long frames = extra == 2 && cmd[0] == 'm' && !strcmp(after, "after") ? index_arg(count, 1000000000) : extra <= 0 ? 0 : -1;
    if (k < 0) snprintf(reply, cap, "err %s %s: devices 0..%u", cmd, arg, (unsigned)emu->cfg.devices - 1);
    else if (frames < 0 || (extra == 2 && frames == 0)) snprintf(reply, cap, "err mute K [after N]: N frames 1..1000000000");
    else if (frames > 0) {
      emu->faults.mute_after[k] = (uint32_t)frames; /* answers N more frames, then mute */
      snprintf(reply, cap, "ok mute %ld after %ld", k, frames);
    } else {
      emu->faults.mute[k] = cmd[0] == 'm';
      emu->faults.mute_after[k] = 0;
      snprintf(reply, cap, "ok %s %ld", cmd, k);
    }
  } else if (!strcmp(cmd, "al") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err al %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else {
      autd3__emu_server_tick_if_drained(s); /* watchdog state as of now (or the last tick, if frames are queued) */
      const uint8_t *m = emu->esc[k].mem;
      snprintf(reply, cap, "ok 0x%02x code 0x%04x", m[0x130], (unsigned)(m[0x134] | (m[0x135] << 8)));
    }
  } else if (!strcmp(cmd, "log") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err log %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else log_reply(s, (uint16_t)k, reply, cap);
  } else if (!strcmp(cmd, "output") && n == 2) {
    long k = index_arg(arg, emu->cfg.devices - 1);
    if (k < 0) snprintf(reply, cap, "err output %s: devices 0..%u", arg, (unsigned)emu->cfg.devices - 1);
    else output_reply(s, (uint16_t)k, reply, cap);
  } else if (!strcmp(cmd, "errors")) {
    errors_cmd(emu, line, reply, cap);
  } else if (!strcmp(cmd, "ping")) {
    snprintf(reply, cap, "ok autd3-emu %u devices", (unsigned)emu->cfg.devices);
  } else if (!strcmp(cmd, "rx-clock")) {
    snprintf(reply, cap, "ok rx-clock kernel %llu read %llu", (unsigned long long)s->rx_clock.kernel,
             (unsigned long long)s->rx_clock.read);
  } else {
    snprintf(reply, cap, "err unknown command '%s' (status, unplug K, replug, power-cycle K, drop P, corrupt P, delay US, silence 1|0, mute K [after N], unmute K, al K, log K, output K, errors K KIND [P] N, ping, rx-clock)", line);
  }
}

