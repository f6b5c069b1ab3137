/*
 * autd3emu: a chain of emulated AUTD3 EtherCAT devices (ESC model + AUTD3
 * firmware, emulation/device/firmware.h) that processes real EtherCAT frames.
 * Not part of libautd3; served on an interface by server.h (autd3-emu), used
 * in-process by tests/emu and by the fuzz target.
 *
 * Model and choices: docs/emulator.md. References (facts, not code):
 * ETG.1000.3/.4/.6, the Beckhoff ESC datasheet (sections I: ESC
 * technology, II: registers), SOEM v2.0.0 ecx_config_init / ecx_configdc.
 *
 * Time: every call takes `now_ns`, the host's CLOCK_MONOTONIC (or any
 * non-decreasing time base in tests). Each device derives its own DC local
 * time from it (drift in ppm, per-device hop delay).
 *
 * Threading: not thread-safe; one thread owns a chain (autd3-emu's loop).
 * Hot path (autd3_emu_process, autd3_emu_tick): no allocation, no I/O,
 * bounded loops.
 */
#ifndef AUTD3_EMULATION_ETHERCAT_EMU_H
#define AUTD3_EMULATION_ETHERCAT_EMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autd3/emulator.h"
#include "autd3/error.h"
#include "ecat/identity.h"
#include "emulation/device/firmware.h"

#define AUTD3_EMU_MAX_DEVICES 128
/* The SII buffer: a 32 Kbit EEPROM without --mailbox (the full PDO list needs
 * more than 2 KiB), the ESI's 16 Kbit (2 KiB) with it (docs/emulator.md "SII image"). */
#define AUTD3_EMU_SII_BYTES 4096

/* AUTD3 identity (SII) */
#define AUTD3_EMU_VENDOR AUTD3_ECAT_VENDOR /* the identity every EtherCAT link checks (src/ecat/identity.h) */
#define AUTD3_EMU_PRODUCT AUTD3_ECAT_PRODUCT
#define AUTD3_EMU_REVISION 0x00000001u

/* Process RAM layout */
#define AUTD3_EMU_SM2_START 0x1800
#define AUTD3_EMU_SM2_LEN 626
#define AUTD3_EMU_SM3_START 0x1F80
#define AUTD3_EMU_SM3_LEN 2

/* AL states and status codes */
enum { ESC_AL_INIT = 1, ESC_AL_PREOP = 2, ESC_AL_BOOT = 3, ESC_AL_SAFEOP = 4, ESC_AL_OP = 8 };
enum {
  ESC_ALSC_OK = 0x0000,
  ESC_ALSC_INVALID_TRANSITION = 0x0011,
  ESC_ALSC_UNKNOWN_STATE = 0x0012,
  ESC_ALSC_BOOT_NOT_SUPPORTED = 0x0013,
  ESC_ALSC_INVALID_MBX_CFG = 0x0016,
  ESC_ALSC_NO_VALID_OUTPUTS = 0x0019,
  ESC_ALSC_SM_WATCHDOG = 0x001B,
  ESC_ALSC_INVALID_OUTPUT_CFG = 0x001D,
  ESC_ALSC_INVALID_INPUT_CFG = 0x001E,
  ESC_ALSC_INVALID_DC_SYNC = 0x0030,
  ESC_ALSC_INVALID_SYNC0_CYCLE = 0x0036,
};

/* Configuration of a chain. autd3_emu_config_default() gives the defaults. */
typedef struct autd3_emu_config {
  uint16_t devices;             /* 1..128 */
  autd3_fw_version_t version;   /* firmware versions every device reports */
  autd3_timing_model_t timing;  /* firmware timing model (include/autd3/emulator.h) */
  uint32_t firmware;            /* autd3_emu_firmware_t: NEW (default), V12, or MIXED (odd-index devices v12) */
  double drift_ppm;             /* device i's oscillator is off by a fixed value in [-drift, +drift] ppm; default 0 */
  uint32_t hop_ns;              /* forwarding delay per device (DC latch model), default 600 ns */
  bool strict_op;               /* SAFE-OP→OP needs one SM2 write first (0x0019 otherwise); default true */
  bool dc_required;             /* PRE-OP→SAFE-OP needs SYNC0 active, cycle multiple of 500 µs; default false */
  uint64_t seed;                /* power-on times, drift signs, fault PRNG */
  bool mailbox;                 /* declare and serve the ESI's mailbox (SM0/SM1, CoE SDO upload); default false */
  bool wire;                    /* 100 Mbit/s wire model (docs/emulator.md "Wire model"); default false */
  uint16_t sm_watchdog_100us;   /* power-on value of the SM watchdog time 0x0420 (100 µs units with 0x0400's default
                                   divider); default 1000 = 100 ms as a real ESC; 0 = disabled (0x0420 = 0) */
  /* A non-AUTD identity for one device (tests of "not an AUTD" handling). */
  int override_index;           /* -1 = none */
  uint32_t override_vendor;
  char override_name[32];
} autd3_emu_config_t;

/* Run-time faults of a chain (control socket / tests). */
typedef struct autd3_emu_faults {
  double drop;      /* fraction of frames not answered (0..1) */
  double corrupt;   /* fraction of answered frames with one bit flipped in the EtherCAT payload */
  bool silence;     /* answer nothing */
  uint16_t present; /* devices present on the wire (unplug K → K); == devices when plugged */
  /* Per device (mute K): its ESC passes every frame on untouched, no data and
   * no working-counter count, while the line through it stays intact: one
   * device gone silent in the middle of a chain. */
  bool mute[AUTD3_MAX_DEVICES];
  /* Per device (mute K after N): frames device K still answers before it goes
   * mute (0 = not armed): a mute that lands at a known point of a sequence of
   * frames, whatever the host's timing. */
  uint32_t mute_after[AUTD3_MAX_DEVICES];
} autd3_emu_faults_t;

/* Per-ESC state: one emulated device. */
typedef struct autd3_esc {
  uint16_t pos;               /* ring position (0-based) */
  const struct autd3_emu_config *cfg; /* the chain's options (strictness) */
  uint8_t mem[0x10000];       /* ESC address space: registers 0x0000-0x0FFF, process RAM above */
  uint8_t sii[AUTD3_EMU_SII_BYTES];
  /* DC local clock (docs/emulator.md "Clock model") */
  uint64_t power_on_ns;       /* host time of power-on */
  int64_t ppb;                /* oscillator error, parts per 10^9 */
  int64_t corr_ns;            /* time-control loop correction added to system time */
  int64_t rate_ppb;           /* time-control loop rate correction (learned drift) */
  int64_t filt_ns;            /* filtered system time difference (0x092C) */
  uint64_t last_compare_ns;   /* host time of the last system-time compare */
  uint64_t t_frame;           /* the host time this device saw the current frame */
  /* SYNC0 */
  bool sync0_on;
  uint64_t sync0_start;       /* system time of the first pulse */
  uint32_t sync0_cycle;
  int64_t sync0_local_shift;  /* system - local at the last grid hand-off to the firmware */
  /* SyncManager 2 / watchdog / outputs */
  uint64_t last_sm2_ns;       /* host time of the last complete SM2 buffer */
  bool sm2_seen;              /* a complete SM2 buffer since entering SAFE-OP */
  uint64_t frames_in;         /* complete output images handed to the firmware */
  /* mailbox (cfg->mailbox): SM1 holds an unread response; CoE upload in progress */
  bool mbx_in_full;
  uint8_t mbx_counter;
  uint8_t sdo_toggle;
  uint16_t sdo_len, sdo_pos;
  uint8_t sdo_buf[1024];      /* a complete-access upload of 0x1600 is 998 bytes */
  /* the firmware on the PDI side (cfg.firmware chooses which, once) and its execution log
   * ("log K" on the control socket), which survives power cycles */
  autd3_fw_dev_t fw;
} autd3_esc_t;

typedef struct autd3_emu {
  autd3_emu_config_t cfg;
  autd3_emu_faults_t faults;
  uint64_t rng;
  uint64_t frames, replied, dropped, corrupted, malformed;
  /* Wire model (cfg.wire): the master's transmit line is busy until wire_busy_ns;
   * after autd3_emu_process, reply_ns is when the reply's last bit is back at
   * the master (without the wire model: the now_ns of the call). */
  uint64_t wire_busy_ns, reply_ns;
  autd3_esc_t *esc; /* cfg.devices entries */
} autd3_emu_t;

autd3_emu_config_t autd3_emu_config_default(void);

/* Create a chain (allocates; the only allocation). All devices power on at now_ns in INIT.
 * Errors: DEVICE_COUNT_RANGE, INVALID_OPTION (override index), OUT_OF_MEMORY. */
autd3_err_t autd3_emu_create(const autd3_emu_config_t *cfg, uint64_t now_ns, autd3_emu_t **out);
void autd3_emu_destroy(autd3_emu_t *emu);

/* Serialisation time of an Ethernet frame of len bytes (without FCS) at 100 Mbit/s:
 * padding to 60, FCS 4, preamble+SFD 8 and inter-frame gap 12 bytes, 80 ns a byte. */
#define AUTD3_EMU_WIRE_NS(len) ((uint64_t)(((len) < 60 ? 60 : (len)) + 24) * 80u)
/* Wire model: a frame that would wait longer than this behind the frames
 * already queued is dropped (a master NIC's transmit ring is finite:
 * 256 descriptors of full-size frames are ~31 ms). */
#define AUTD3_EMU_WIRE_BACKLOG_NS 32000000ull

/* Process one received Ethernet frame in place (the ring walk).
 * now_ns is when the master put the frame on the wire (the emulator read it).
 * With cfg.wire, an EtherCAT frame first waits for the frames before it
 * (wire_busy_ns), then reaches device k complete after its own serialisation
 * and k hops: that is the time each ESC (SM2-complete event, DC latches) and
 * firmware sees; reply_ns = that start + serialisation + 2 x present hops.
 * Returns true when a reply of the same length must be sent (source MAC with
 * the locally-administered bit set); false = no reply (dropped, silenced,
 * not an Ethernet/EtherCAT frame we answer). Never reads or writes outside
 * [frame, frame+len). Frames that are not type-1 EtherCAT, or whose datagram
 * chain does not fit, are returned unchanged (as a real ring would pass them). */
bool autd3_emu_process(autd3_emu_t *emu, uint8_t *frame, size_t len, uint64_t now_ns);

/* Time-driven work without a frame (SM watchdog, firmware SYNC0 events). */
void autd3_emu_tick(autd3_emu_t *emu, uint64_t now_ns);

/* Faults. unplug(k): devices k.. leave the ring (k in 0..devices; k == devices replugs). */
autd3_err_t autd3_emu_unplug(autd3_emu_t *emu, uint16_t k);
void autd3_emu_replug(autd3_emu_t *emu);
/* Power-cycle device k: ESC registers, DC clock and firmware back to power-on (INIT). */
autd3_err_t autd3_emu_power_cycle(autd3_emu_t *emu, uint16_t k, uint64_t now_ns);

/* ESC error counters 0x0300-0x0313 (errors.c, docs/emulator.md "Error counters"). */
typedef enum autd3_emu_err_kind {
  AUTD3_EMU_ERR_CRC,      /* invalid frames (CRC) at a port: 0x0300+2p, and forwarded errors downstream */
  AUTD3_EMU_ERR_PHY,      /* PHY RX errors at a port: 0x0301+2p */
  AUTD3_EMU_ERR_FWD,      /* forwarded RX errors at a port: 0x0308+p */
  AUTD3_EMU_ERR_PU,       /* ECAT processing unit errors: 0x030C */
  AUTD3_EMU_ERR_PDI,      /* PDI errors: 0x030D */
  AUTD3_EMU_ERR_LOST_LINK /* lost link at a port: 0x0310+p */
} autd3_emu_err_kind_t;
/* Record n errors of `kind` at device k's `port` (0..3; ignored by PU/PDI); counters stop at 0xFF.
 * Errors: INVALID_OPTION (device, port, kind). */
autd3_err_t autd3_emu_inject_errors(autd3_emu_t *emu, uint16_t k, autd3_emu_err_kind_t kind, uint8_t port, uint32_t n);
/* Device k lost the link at `port` (one more in its lost link counter). */
void autd3_emu_link_lost(autd3_emu_t *emu, uint16_t k, uint8_t port);

/* One text line per device: "dev K state S[+ERR] code 0xC rx R exec E ack A" (+ a chain line).
 * Returns the length written (truncated to cap-1). */
size_t autd3_emu_status(const autd3_emu_t *emu, char *buf, size_t cap);

/* --- canned master traffic (script.c) for the fuzz target, benchmark and tests --- */
#define AUTD3_EMU_SCRIPT_FRAME 1514
typedef void (*autd3_emu_emit_fn)(void *ctx, uint8_t *frame, size_t len);
/* Emit the frames that take a chain of n devices to OP the way SOEM maps an
 * AUTD3 (station 0x1001+i, SM2/SM3, FMMU0 outputs at 626·i, FMMU1 inputs at
 * 626·n+2·i, SAFE-OP, one output image per device, OP). */
void autd3_emu_script_op(uint16_t n, autd3_emu_emit_fn emit, void *ctx);
/* Build one cycle of SOEM's process data for n devices: LRD(inputs)+FRMW,
 * then LWR segments of at most two devices. Returns the frame count (<= max). */
size_t autd3_emu_script_cycle(uint16_t n, uint8_t (*frames)[AUTD3_EMU_SCRIPT_FRAME], size_t *lens, size_t max);

/* --- the single-ESC layer (esc.c), exposed for unit tests --- */
void autd3_esc_power_on(autd3_esc_t *e, const autd3_emu_config_t *cfg, uint16_t pos, uint64_t now_ns);
/* DC local time of device e at host time t. */
uint64_t autd3_esc_local(const autd3_esc_t *e, uint64_t t);
/* DC system time (local + offset 0x0920 + control-loop correction). */
uint64_t autd3_esc_systime(const autd3_esc_t *e, uint64_t t);
/* Apply one datagram to device e (address matching, data, WKC, ADP increment).
 * hdr points to the 10-byte datagram header followed by len data bytes and the WKC.
 * t = host time the frame reaches this device; ret_t = host time it passes on the way back. */
void autd3_esc_datagram(autd3_esc_t *e, uint8_t *hdr, uint16_t len, uint64_t t, uint64_t ret_t, bool last);
void autd3_esc_tick(autd3_esc_t *e, uint64_t now_ns);
uint8_t autd3_esc_al_state(const autd3_esc_t *e);
/* DL status 0x0110 of device e (last: the end of the line, port 1 closed). */
uint16_t autd3_esc_dl_status(const autd3_esc_t *e, bool last);

/* --- the SII image (sii.c) --- */
/* Build the AUTD3 SII image into sii (AUTD3_EMU_SII_BYTES, rest 0xFF). name NULL = "AUTD".
 * mailbox: declare SM0/SM1 mailboxes with CoE (SDO + complete access), else none. */
void autd3_sii_build(uint8_t *sii, uint32_t vendor, uint32_t serial, const char *name, bool mailbox);

/* --- the mailbox (mailbox.c) --- */
/* The master wrote SM0's last byte: serve the request, answer into SM1. */
void autd3_esc_mailbox(autd3_esc_t *e);
/* CRC-8 (poly 0x07, init 0xFF) over words 0..6, the SII header checksum. */
uint8_t autd3_sii_crc(const uint8_t *bytes14);

#endif
