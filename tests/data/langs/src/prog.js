// prog.js: nested JS functions entering the kernel with short syscalls (fs.statSync, fs.readFileSync,
// fs.openSync/readSync/closeSync, process.ppid -> getppid) for about N seconds.
// Usage: node [--perf-basic-prof | --perf-prof --interpreted-frames-native-stack] prog.js [seconds]
'use strict';
const fs = require('fs');

function leafStat(path) {
  return fs.statSync(path).mode;
}

function leafRead(path) {
  return fs.readFileSync(path).length;
}

function leafOpenRead(buf) {
  const fd = fs.openSync('/dev/zero', 'r');
  const n = fs.readSync(fd, buf, 0, buf.length, null);
  fs.closeSync(fd);
  return n;
}

function leafPpid() {
  return process.ppid;
}

class Walker {
  constructor(path) {
    this.path = path;
    this.buf = Buffer.alloc(64);
  }
  statMany(n) {
    let s = 0;
    for (let i = 0; i < n; i++) s += leafStat(this.path);
    return s;
  }
  readMany(n) {
    let s = 0;
    for (let i = 0; i < n; i++) s += leafOpenRead(this.buf);
    return s;
  }
}

function middle(w) {
  return w.statMany(3) + w.readMany(2) + leafRead('/proc/self/stat');
}

function withClosure(k) {
  const inner = (i) => leafPpid() + k + i;
  return [0, 1, 2].map(inner).reduce((a, b) => a + b, 0);
}

function outer(seconds) {
  const w = new Walker('/');
  const end = Date.now() + seconds * 1000;
  let rounds = 0;
  let sink = 0;
  while (Date.now() < end) {
    sink += middle(w);
    sink += withClosure(rounds);
    rounds++;
  }
  return [rounds, sink];
}

const [rounds] = outer(process.argv.length > 2 ? parseFloat(process.argv[2]) : 1.0);
console.log('prog.js:', rounds, 'rounds');
