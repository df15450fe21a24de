// Prog.java: nested Java methods entering the kernel with short syscalls (file stat via
// Files.getAttribute/isDirectory, FileInputStream open + read, Files.readAllBytes) for about N seconds.
// Run: java -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit Prog [seconds]
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.function.IntToLongFunction;

public class Prog {
    static long sink;

    static long leafStat(Path p) throws IOException {
        return Files.size(p) + (Files.isDirectory(p) ? 1 : 0);
    }

    static long leafRead(String path, byte[] buf) throws IOException {
        try (FileInputStream in = new FileInputStream(path)) {
            return in.read(buf);
        }
    }

    static long leafReadAll(Path p) throws IOException {
        return Files.readAllBytes(p).length;
    }

    interface Toucher { long touch(int rounds) throws IOException; }

    static final class Statter implements Toucher {
        private final Path path;
        Statter(String p) { path = Paths.get(p); }
        public long touch(int rounds) throws IOException {
            long s = 0;
            for (int i = 0; i < rounds; i++) s += leafStat(path);
            return s;
        }
    }

    static final class Reader implements Toucher {
        private final byte[] buf = new byte[64];
        public long touch(int rounds) throws IOException {
            long s = 0;
            for (int i = 0; i < rounds; i++) s += leafRead("/dev/zero", buf);
            return s;
        }
    }

    static long middle(Toucher[] ts) throws IOException {
        long s = 0;
        for (Toucher t : ts) s += t.touch(3);
        return s + leafReadAll(Paths.get("/proc/self/stat"));
    }

    static long withLambda(int k) {
        IntToLongFunction f = i -> (Files.exists(Paths.get("/tmp")) ? 1 : 0) + k + i;
        long s = 0;
        for (int i = 0; i < 3; i++) s += f.applyAsLong(i);
        return s;
    }

    static int outer(double seconds) throws IOException {
        Toucher[] ts = { new Statter("/"), new Reader() };
        long end = System.nanoTime() + (long) (seconds * 1e9);
        int rounds = 0;
        while (System.nanoTime() < end) {
            sink += middle(ts);
            sink += withLambda(rounds);
            rounds++;
        }
        return rounds;
    }

    public static void main(String[] args) throws IOException {
        int rounds = outer(args.length > 0 ? Double.parseDouble(args[0]) : 1.0);
        System.out.println("Prog: " + rounds + " rounds");
    }
}
