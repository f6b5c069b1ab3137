/* Test runner: `test_x NAME` runs one case in this process (how ctest runs
 * them); `test_x` alone runs every case, each in a forked child (POSIX; on
 * Windows it lists the cases, which are run by name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "harness/test.h"

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc > 1) {
    for (int i = 0; i < autd3_test_num_cases; i++) {
      if (strcmp(autd3_test_cases[i].name, argv[1]) == 0) {
        autd3_test_cases[i].fn();
        return 0;
      }
    }
    fprintf(stderr, "no test named %s\n", argv[1]);
    return 2;
  }
#ifdef _WIN32
  for (int i = 0; i < autd3_test_num_cases; i++) printf("%s\n", autd3_test_cases[i].name);
  return 0;
#else
  int failed = 0, skipped = 0;
  for (int i = 0; i < autd3_test_num_cases; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      autd3_test_cases[i].fn();
      _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    const char *r = code == 0 ? "ok" : code == 77 ? "skipped" : "FAILED";
    if (code == 77) skipped++;
    else if (code != 0) failed++;
    printf("%-40s %s\n", autd3_test_cases[i].name, r);
  }
  printf("%d passed, %d failed, %d skipped\n", autd3_test_num_cases - failed - skipped, failed, skipped);
  return failed ? 1 : 0;
#endif
}
