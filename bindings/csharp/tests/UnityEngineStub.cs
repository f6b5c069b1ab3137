// A stand-in for the few UnityEngine types the Unity sample (unity/Samples~/Focus) uses, so that
// csharp.unity_package can compile the sample with mcs. Not Unity: it proves the sample type-checks
// against the binding, nothing about Unity's behaviour.
namespace UnityEngine
{
    public class Object { }
    public class Behaviour : Object { public bool enabled { get; set; } }
    public class MonoBehaviour : Behaviour { }
    public struct Vector3
    {
        public float x, y, z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
        public static bool operator ==(Vector3 a, Vector3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
        public static bool operator !=(Vector3 a, Vector3 b) { return !(a == b); }
        public override bool Equals(object o) { return o is Vector3 && (Vector3)o == this; }
        public override int GetHashCode() { return x.GetHashCode() ^ y.GetHashCode() ^ z.GetHashCode(); }
    }
    public static class Debug
    {
        public static void Log(object m) { System.Console.WriteLine(m); }
        public static void LogError(object m) { System.Console.Error.WriteLine(m); }
    }
    [System.AttributeUsage(System.AttributeTargets.Field)]
    public class TooltipAttribute : System.Attribute { public TooltipAttribute(string t) { } }
}
