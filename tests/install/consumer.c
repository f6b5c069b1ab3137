/* A program that uses the *installed* libautd3, as a user would. */
#include <autd3/autd3.h>
#include <stdio.h>

int main(void) {
  autd3_geometry_t *g = NULL;
  if (autd3_geometry_create(2, NULL, &g) != AUTD3_OK) return 1;
  autd3_link_option_t l = autd3_link_option_default(AUTD3_LINK_EMULATOR);
  autd3_client_t *c = NULL;
  if (autd3_client_open(g, &l, NULL, &c) != AUTD3_OK) {
    printf("open: %s\n", autd3_last_error());
    return 1;
  }
  autd3_frame_t f;
  autd3_frame_xor_hash_bench(&f, 0, 620);
  autd3_err_t e = autd3_client_send_checked(c, &f, NULL);
  printf("send_checked: %s (libautd3 %s)\n", autd3_err_name(e), autd3_version_string());
  autd3_err_t ce = autd3_client_close(c);
  if (ce != AUTD3_OK) printf("close: %s: %s\n", autd3_err_name(ce), autd3_last_error());
  autd3_geometry_free(g);
  return e != AUTD3_OK || ce != AUTD3_OK;
}
