/*
 * Make ultrasound: a focal point 150 mm above the centre of two AUTD3
 * devices, amplitude-modulated by a 150 Hz sine, on the in-process emulator.
 * The program reads back what the emulated devices emit, closes the client
 * (which silences every device) and checks that they are silent.
 *
 * A real array: swap AUTD3_LINK_EMULATOR for AUTD3_LINK_ECHOCAT (or SOEM,
 * TwinCAT, ...) and drop the emulator read-backs. docs/commands.md explains
 * the commands.
 */
#include <stdio.h>
#include <stdlib.h>

#include <autd3/autd3.h>

static int fail(const char *what) {
  fprintf(stderr, "focus: %s: %s\n", what, autd3_last_error());
  return 1;
}

int main(void) {
  autd3_geometry_t *geo = NULL;
  if (autd3_geometry_create(2, NULL, &geo) != AUTD3_OK) return fail("geometry"); /* two devices in a row along x */

  autd3_link_option_t link = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_client_t *client = NULL;
  if (autd3_client_open(geo, &link, NULL, &client) != AUTD3_OK) return fail("open");
  /* Keep a handle on the emulated outputs: it outlives the client. */
  autd3_emulator_outputs_t *outputs = NULL;
  if (autd3_emulator_outputs(autd3_client_link(client), &outputs) != AUTD3_OK) return fail("emulator outputs");

  /* Silencer: the reference's default (250 us intensity, 1 ms phase, strict). */
  autd3_command_t cmd;
  autd3_frame_t frame;
  if (autd3_cmd_silencer_default(&cmd) != AUTD3_OK || autd3_frame_broadcast(&cmd, &frame) != AUTD3_OK ||
      autd3_client_send_checked(client, &frame, NULL) != AUTD3_OK)
    return fail("silencer");

  /* Modulation: 150 Hz sine sampled at 4 kHz (divider 10), pyautd3's default depth. */
  static uint8_t samples[4096];
  autd3_modulation_t sine;
  if (autd3_modulation_sine(150.0f, 10, 255, 127, samples, sizeof samples, &sine) != AUTD3_OK) return fail("sine");
  autd3_command_t mod_cmds[AUTD3_MODULATION_MAX_COMMANDS];
  size_t n = 0;
  if (autd3_modulation_commands(&sine, mod_cmds, AUTD3_MODULATION_MAX_COMMANDS, &n) != AUTD3_OK) return fail("modulation");
  for (size_t i = 0; i < n; i++)
    if (autd3_frame_broadcast(&mod_cmds[i], &frame) != AUTD3_OK || autd3_client_send_checked(client, &frame, NULL) != AUTD3_OK)
      return fail("send modulation");

  /* Focus 150 mm above the centre of the array (transducer 0 of device 0 is at the origin). */
  const float x = AUTD3_DEVICE_WIDTH_MM - AUTD3_TRANSDUCER_PITCH_MM / 2, y = 6.5f * AUTD3_TRANSDUCER_PITCH_MM, z = 150.0f;
  autd3_gain_t focus = autd3_gain_focus(x, y, z);
  autd3_frame_buffer_t *buf = malloc(sizeof *buf); /* ~80 KB: one payload per device */
  if (buf == NULL) return 1;
  if (autd3_gain_frame(&focus, geo, buf, &frame) != AUTD3_OK) return fail("focus");
  if (autd3_client_send_checked(client, &frame, NULL) != AUTD3_OK) return fail("send focus");

  /* What device 1 emits now. */
  autd3_output_state_t st;
  if (autd3_emulator_output(autd3_client_link(client), 1, &st) != AUTD3_OK) return fail("read state");
  printf("focus at (%.1f, %.1f, %.1f) mm\n", (double)x, (double)y, (double)z);
  printf("device 1 transducer 17: phase %u/256, intensity %u\n", st.phase[17], st.intensity[17]);
  printf("device 1 modulation: %u samples every %u x 25 us, current sample %u\n", (unsigned)st.modulation_size,
         st.modulation_divider, st.modulation);
  printf("device 1 silencer: completion %u / %u steps (intensity / phase)\n", st.silencer_completion_steps_intensity,
         st.silencer_completion_steps_phase);

  if (autd3_client_close(client) != AUTD3_OK) return fail("close");
  int loud = 0;
  for (uint16_t d = 0; d < 2; d++) {
    if (autd3_emulator_outputs_read(outputs, d, &st) != AUTD3_OK) return fail("read state after close");
    for (int t = 0; t < AUTD3_OUTPUT_TRANSDUCERS; t++) loud += st.intensity[t] != 0;
  }
  printf("after close: %d transducers emitting\n", loud);
  autd3_emulator_outputs_release(outputs);
  free(buf);
  autd3_geometry_free(geo);
  return loud == 0 ? 0 : 1;
}
