// examples/focus.c in C++ (include/autd3/autd3.hpp, docs/cpp.md): a focal point 150 mm above the centre of
// two AUTD3 devices, amplitude-modulated by a 150 Hz sine, on the in-process emulator. It reads back what
// the emulated devices emit, closes the client (which silences every device) and checks they are silent.
//
// A real array: LinkOption::echocat("eth0") (or soem, twincat, ...) instead of emulator(), and drop the
// emulator read-backs. Errors are exceptions here; every call has a try_ form returning autd3::Result.
#include <autd3/autd3.hpp>

#include <chrono>
#include <cstdio>

int main() {
  using namespace std::chrono_literals;
  try {
    auto geo = autd3::Geometry::create(2);  // two devices in a row along x
    auto client = autd3::Client::open(geo, autd3::LinkOption::emulator());
    auto outputs = client.link().outputs();  // outlives the client

    // Silencer: the reference's default (250 us intensity, 1 ms phase, strict).
    client.send_checked(autd3::Frame::broadcast(autd3::Command::silencer_fixed_completion_time(250us, 1ms, true)));
    // Modulation: 150 Hz sine sampled at 4 kHz (divider 10), pyautd3's default depth.
    for (const auto &cmd : autd3::Modulation::sine(150.0f, 10).commands()) client.send_checked(autd3::Frame::broadcast(cmd));

    // Focus 150 mm above the centre of the array (transducer 0 of device 0 is at the origin).
    const float x = AUTD3_DEVICE_WIDTH_MM - AUTD3_TRANSDUCER_PITCH_MM / 2, y = 6.5f * AUTD3_TRANSDUCER_PITCH_MM, z = 150.0f;
    autd3::FrameBuffer buf;  // one payload per device; the frame points into it
    auto resp = client.send_checked(autd3::Gain::focus(x, y, z).frame(geo, buf));
    std::printf("focus at (%.1f, %.1f, %.1f) mm: %zu devices executed it\n", double(x), double(y), double(z),
                resp.all_executed() ? resp.num_devices() : size_t{0});

    auto st = client.link().output(1);
    std::printf("device 1 transducer 17: phase %u/256, intensity %u\n", st.phase[17], st.intensity[17]);
    std::printf("device 1 modulation: %u samples every %u x 25 us, current sample %u\n", unsigned(st.modulation_size),
                st.modulation_divider, st.modulation);
    std::printf("device 1 silencer: completion %u / %u steps (intensity / phase)\n", st.silencer_completion_steps_intensity,
                st.silencer_completion_steps_phase);

    client.close();  // throws if a device did not confirm it is silent
    int loud = 0;
    for (uint16_t d = 0; d < 2; d++) {
      auto after = outputs.try_read(d).value();
      for (int t = 0; t < AUTD3_OUTPUT_TRANSDUCERS; t++) loud += after.intensity[t] != 0;
    }
    std::printf("after close: %d transducers emitting\n", loud);
    return loud == 0 ? 0 : 1;
  } catch (const autd3::Exception &e) {
    std::fprintf(stderr, "focus: %s\n", e.what());
    return 1;
  }
}
