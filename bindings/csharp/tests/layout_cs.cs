// The C# side of csharp.layout_*: size and field offsets of every [CStruct] mirror in Autd3.Native as the
// marshaller computes them (Marshal.SizeOf / Marshal.OffsetOf), in the format of the generated C program
// (gen_layout_c.py): "NAME size N" and "NAME.FIELD OFFSET"; a [CUnion] field prints its members as
// "NAME.FIELD.MEMBER". Also checks that each mirror is blittable (pinnable), so these are also the sizes
// P/Invoke passes without copying.
using System;
using System.Linq;
using System.Reflection;
using System.Runtime.InteropServices;
using Autd3.Native;

static class LayoutCs
{
    /* Blittable = the same bytes in managed and native memory: primitives other than bool and char, pointers,
     * enums, fixed buffers of those, and structs of those. (Mono lets a struct with a bool be pinned, so
     * pinning proves nothing: the field types are checked.) Null when blittable, else the offending field. */
    static string NotBlittable(Type t)
    {
        foreach (FieldInfo f in t.GetFields(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Instance))
        {
            Type ft = f.FieldType;
            if (f.GetCustomAttributes(typeof(System.Runtime.CompilerServices.FixedBufferAttribute), false).Length > 0)
                ft = ((System.Runtime.CompilerServices.FixedBufferAttribute)f.GetCustomAttributes(typeof(System.Runtime.CompilerServices.FixedBufferAttribute), false)[0]).ElementType;
            if (ft.IsEnum) ft = Enum.GetUnderlyingType(ft);
            if (ft == typeof(bool) || ft == typeof(char) || !ft.IsValueType) return f.Name + " (" + f.FieldType.Name + ")";
            if (ft.IsPrimitive || ft == typeof(IntPtr) || ft == typeof(UIntPtr)) continue;
            string inner = NotBlittable(ft);
            if (inner != null) return f.Name + "." + inner;
        }
        return null;
    }

    static int Main()
    {
        int bad = 0;
        var types = typeof(Lib).Assembly.GetTypes().Where(t => t.GetCustomAttributes(typeof(CStructAttribute), false).Length > 0)
                                                  .OrderBy(t => ((CStructAttribute)t.GetCustomAttributes(typeof(CStructAttribute), false)[0]).Name, StringComparer.Ordinal);
        foreach (Type t in types)
        {
            string name = ((CStructAttribute)t.GetCustomAttributes(typeof(CStructAttribute), false)[0]).Name;
            Console.WriteLine(name + " size " + Marshal.SizeOf(t));
            foreach (FieldInfo f in t.GetFields(BindingFlags.Public | BindingFlags.Instance))
            {
                long off = Marshal.OffsetOf(t, f.Name).ToInt64();
                Console.WriteLine(name + "." + f.Name + " " + off);
                if (f.FieldType.GetCustomAttributes(typeof(CUnionAttribute), false).Length > 0)
                    foreach (FieldInfo m in f.FieldType.GetFields(BindingFlags.Public | BindingFlags.Instance))
                        Console.WriteLine(name + "." + f.Name + "." + m.Name + " " + (off + Marshal.OffsetOf(f.FieldType, m.Name).ToInt64()));
            }
            string why = NotBlittable(t);
            if (why != null) { Console.Error.WriteLine(name + ": not blittable: " + why); bad++; }
        }
        return bad == 0 ? 0 : 1;
    }
}
