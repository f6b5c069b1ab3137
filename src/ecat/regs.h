/*
 * The EtherCAT register map, once for the whole tree: command codes, ESC
 * register addresses and AL state codes as the EtherCAT master (echocat), the
 * device emulator (src/emulation/ethercat) and the SOEM/EtherCrab glue use them. Numbers
 * from ETG.1000.4 (data link layer: commands, frames) and ETG.1000.6 / the
 * Beckhoff ESC datasheet, Technology section I (registers, AL states), as
 * summarised in docs/echocat.md and docs/emulator.md. Header-only, no OS
 * header, any thread.
 */
#ifndef AUTD3_ECAT_REGS_H
#define AUTD3_ECAT_REGS_H

/* Datagram command codes (ETG.1000.4). */
enum {
  ECAT_NOP = 0, ECAT_APRD = 1, ECAT_APWR = 2, ECAT_APRW = 3, ECAT_FPRD = 4, ECAT_FPWR = 5, ECAT_FPRW = 6,
  ECAT_BRD = 7, ECAT_BWR = 8, ECAT_BRW = 9, ECAT_LRD = 10, ECAT_LWR = 11, ECAT_LRW = 12, ECAT_ARMW = 13,
  ECAT_FRMW = 14
};

/* ESC registers. */
enum {
  REG_TYPE = 0x0000,     /* ESC type (BRD: the working counter counts the slaves) */
  REG_STADR = 0x0010,    /* configured station address */
  REG_STALIAS = 0x0012,  /* configured station alias */
  REG_DLCTL = 0x0100,    /* DL control (loop control in byte 1) */
  REG_DLSTAT = 0x0110,   /* DL status */
  REG_ALCTL = 0x0120,    /* AL control */
  REG_ALSTAT = 0x0130,   /* AL status */
  REG_ALCODE = 0x0134,   /* AL status code */
  REG_ERRCNT = 0x0300,   /* error counters 0x0300-0x0313: invalid frame / RX error per port, forwarded, PU, PDI, lost link */
  REG_WDDIV = 0x0400,    /* watchdog divider */
  REG_WDSM = 0x0420,     /* SyncManager watchdog time */
  REG_WDSMST = 0x0440,   /* SyncManager watchdog status */
  REG_EEPCFG = 0x0500,   /* SII EEPROM configuration (ECAT/PDI access) */
  REG_EEPCTL = 0x0502,   /* SII EEPROM control/status */
  REG_EEPADR = 0x0504,   /* SII EEPROM address */
  REG_EEPDAT = 0x0508,   /* SII EEPROM data */
  REG_FMMU0 = 0x0600,    /* FMMU 0 (16 bytes each) */
  REG_SM0 = 0x0800,      /* SyncManager 0 (8 bytes each) */
  REG_SM2 = 0x0810,      /* SyncManager 2: process data outputs */
  REG_DCRT0 = 0x0900,    /* DC receive time port 0 (a write latches every port) */
  REG_DCSYS = 0x0910,    /* DC system time */
  REG_DCRTPU = 0x0918,   /* DC receive time of the processing unit */
  REG_DCOFS = 0x0920,    /* DC system time offset */
  REG_DCDELAY = 0x0928,  /* DC system time transmission delay */
  REG_DCDIFF = 0x092C,   /* DC system time difference (sign + magnitude) */
  REG_DCSPEED = 0x0930,  /* DC speed counter start (writing resets the drift filter) */
  REG_DCFILT = 0x0934,   /* DC time difference filter depth */
  REG_DCCUC = 0x0980,    /* DC cyclic unit control */
  REG_DCACT = 0x0981,    /* DC activation (SYNC0 on) */
  REG_DCACTST = 0x0984,  /* DC activation status */
  REG_DCSTART0 = 0x0990, /* DC start time of SYNC0 */
  REG_DCCYC0 = 0x09A0    /* DC SYNC0 cycle time */
};

/* The ESC configuration an ESC loads from SII words 0-3 at power-on and on a
 * reload (Beckhoff ESC datasheet, section II: SII EEPROM, configuration area). */
enum {
  REG_PDICTL = 0x0140,  /* PDI control (SII word 0, low byte) */
  REG_ESCCFG = 0x0141,  /* ESC configuration (SII word 0, high byte): enhanced link detection, DC units */
  REG_PDICFG = 0x0150,  /* PDI configuration (SII word 1) */
  REG_PDICFG2 = 0x0152, /* extended PDI configuration (SII word 3) */
  REG_SYNCLEN = 0x0982  /* SYNC signal pulse length (SII word 2) */
};

/* AL states (low nibble of AL control/status) and flags. */
enum { AL_INIT = 1, AL_PREOP = 2, AL_BOOT = 3, AL_SAFEOP = 4, AL_OP = 8, AL_ERROR = 0x10, AL_ACK = 0x10 };

#endif
