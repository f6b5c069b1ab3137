// Minimal AUTD3 MonoBehaviour: opens the array when enabled, puts a focal point `focus` (mm, array frame)
// with a 150 Hz modulation, moves it when `focus` changes, and closes when disabled or on quit. Closing
// silences every device (Client.Dispose), so leaving Play mode never leaves the array emitting.
//
// Threads: every call here runs on Unity's main thread or completes through SendAsync's Task (the binding's
// own managed completion thread); libautd3's bus thread never calls into C#, which is what crashed Unity
// with raw-Ethernet links in other bindings (a native thread entering managed code).
using System;
using System.Threading.Tasks;
using Autd3;
using UnityEngine;

public class Autd3Focus : MonoBehaviour
{
    [Tooltip("emulator (no hardware), or echocat / soem with the adapter below")]
    public string link = "emulator";
    [Tooltip("Network adapter of the EtherCAT links; empty = the first one whose slaves are all AUTD3")]
    public string adapter = "";
    public int devices = 1;
    [Tooltip("Focal point in mm, in the array's frame (transducer 0 of device 0 at the origin)")]
    public Vector3 focus = new Vector3(86.6f, 66.0f, 150.0f);

    Geometry geometry;
    Client client;
    FrameBuffer buffer;
    Vector3 sent;
    Task<Response> inFlight;

    void OnEnable()
    {
        try
        {
            geometry = Geometry.Create(devices);
            client = Client.Open(geometry, Options());
            buffer = new FrameBuffer();
            client.SendChecked(Frame.Broadcast(Command.SilencerDefault()));
            foreach (Command m in Modulation.Sine(150f)) client.SendChecked(Frame.Broadcast(m));
            Focus();
            Debug.Log("AUTD3: " + client.NumDevices + " device(s) open through " + link);
        }
        catch (AutdException e)
        {
            Debug.LogError("AUTD3: " + e.Message);
            Close();
            enabled = false;
        }
    }

    ILinkOptions Options()
    {
        switch (link)
        {
            case "echocat": { var o = EchocatOptions.Default; o.Ethercat.Interface = adapter.Length > 0 ? adapter : null; return o; }
            case "soem": { var o = SoemOptions.Default; o.Ethercat.Interface = adapter.Length > 0 ? adapter : null; return o; }
            default: return EmulatorOptions.Default;
        }
    }

    void Update()
    {
        if (client == null) return;
        if (inFlight != null && inFlight.IsFaulted) Debug.LogError("AUTD3: " + inFlight.Exception.InnerException.Message);
        // One focus frame at a time: the next one once the previous completed.
        if ((inFlight == null || inFlight.IsCompleted) && focus != sent) Focus();
    }

    void Focus()
    {
        sent = focus;
        inFlight = client.SendAsync(Gain.Focus(focus.x, focus.y, focus.z).ToFrame(geometry, buffer));
    }

    void OnDisable() { Close(); }
    void OnApplicationQuit() { Close(); }

    void Close()
    {
        if (client != null)
        {
            try { client.Close(); Debug.Log("AUTD3: closed, every device silent"); }
            catch (AutdException e) { Debug.LogError("AUTD3: " + e.Message); }
            client = null;
        }
        if (inFlight != null) { try { inFlight.Wait(1000); } catch (AggregateException) { } inFlight = null; }
        if (buffer != null) { buffer.Dispose(); buffer = null; }
        if (geometry != null) { geometry.Dispose(); geometry = null; }
    }
}
