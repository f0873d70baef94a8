#!/usr/bin/env node
// The `facts` command of the npm package `factmem`: a launcher, in plain Node.js with no
// dependencies, for the native binary of this platform. `factmem` lists one package per
// release target in its optionalDependencies (`@factmem/cli-linux-x64-gnu`, ...; the table is
// `TARGETS` in xtask/src/dist.rs); npm installs only the one whose `os`, `cpu` and `libc`
// match this machine. This script finds that package's binary, runs it with this process's
// arguments and standard streams, forwards SIGINT, SIGTERM and SIGHUP to it, and exits as it
// exits: with its code, or by the signal that ended it.
"use strict";

const { spawn } = require("node:child_process");
const { constants } = require("node:os");

const manifest = require("../package.json");

/** The platform key of this machine: os-cpu, then the C library on Linux, msvc on Windows. */
function platformKey() {
  const { platform, arch } = process;
  if (platform === "linux") {
    const report =
      typeof process.report?.getReport === "function" ? process.report.getReport() : {};
    return `linux-${arch}-${report.header?.glibcVersionRuntime ? "gnu" : "musl"}`;
  }
  if (platform === "win32") {
    return `win32-${arch}-msvc`;
  }
  return `${platform}-${arch}`;
}

function fail(message) {
  process.stderr.write(`facts: ${message}\n`);
  process.exit(1);
}

const key = platformKey();
const pkg = `@factmem/cli-${key}`;
const supported = Object.keys(manifest.optionalDependencies || {});
if (!supported.includes(pkg)) {
  const keys = supported.map((name) => name.replace("@factmem/cli-", "")).join(", ");
  fail(
    `unsupported platform ${key}: factmem ${manifest.version} has no package ${pkg} ` +
      `(its platforms: ${keys}). Build the command from source instead: ` +
      "cargo install factmem-cli --locked",
  );
}

const exe = process.platform === "win32" ? "facts.exe" : "facts";
let binary;
try {
  binary = require.resolve(`${pkg}/bin/${exe}`);
} catch {
  fail(
    `the package ${pkg} for this platform (${key}) is not installed. It is an optional ` +
      "dependency of factmem: reinstall factmem without --omit=optional or --no-optional, " +
      `or install it with: npm install ${pkg}@${manifest.version}`,
  );
}

const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => {
  try {
    child.kill(signal);
  } catch {
    // The child has already exited; its exit handler ends this process.
  }
};
for (const signal of forwarded) {
  process.on(signal, forward);
}
child.on("error", (error) => fail(`cannot run ${binary}: ${error.message}`));
child.on("exit", (code, signal) => {
  for (const name of forwarded) {
    process.removeListener(name, forward);
  }
  if (signal) {
    // Ended by a signal: end this process by the same one, so the caller sees it too; should
    // that not end it, the exit code is the shells' 128 + the signal's number.
    process.exitCode = 128 + (constants.signals[signal] || 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
