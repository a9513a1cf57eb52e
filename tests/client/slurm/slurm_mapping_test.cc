#include "client/slurm/slurm_mapping.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "client/format.h"
#include "client/slurm/slurm_backend.h"
#include "common/subprocess.h"

namespace hpcb::client::slurm {
namespace {

using Words = std::vector<std::string>;

const Submitter kAlice{"alice", "/home/alice", "/bin/bash"};

protocol::SubmitRequest Request(Words argv) {
  protocol::SubmitRequest request;
  request.argv = std::move(argv);
  request.cwd = "/home/alice/bench";
  request.output = "/home/alice/bench";
  return request;
}

bool Has(const Words& words, const std::string& word) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

TEST(MapSubmitTest, EveryMappedOptionBecomesItsSbatchFlag) {
  protocol::SubmitRequest request = Request({"./bench.sh", "--iterations", "10"});
  request.cpu = 4;
  request.max_mem_gb = 16;
  request.max_time_s = 2 * 3600;
  request.exclusive = true;
  request.numa_local_mem = true;
  request.numa_local_gpu = true;
  request.gpu_cores = 2;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_EQ(
      job->args,
      (Words{"--parsable", "--job-name=./bench.sh --iterations 10", "--chdir=/home/alice/bench",
             "--nodes=1", "--ntasks=1", "--cpus-per-task=4", "--mem=16384M", "--mem-bind=local",
             "--gres=gpu:2", "--gres-flags=enforce-binding", "--time=120", "--exclusive",
             "--output=/home/alice/bench/output.%j.log", "--export=NONE"}));
  EXPECT_EQ(job->output_template, "/home/alice/bench/output.%j.log");
  EXPECT_EQ(OutputPathFor(job->output_template, 812), "/home/alice/bench/output.812.log");
  EXPECT_TRUE(job->notes.empty());
}

TEST(MapSubmitTest, DefaultsLeaveSlurmItsOwnDefaults) {
  protocol::SubmitRequest request = Request({"echo", "hello"});
  request.output.reset();  // --no-output
  auto job = MapSubmit(request, {}, kAlice, false);
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_EQ(job->args, (Words{"--parsable", "--job-name=echo hello", "--chdir=/home/alice/bench",
                              "--nodes=1", "--ntasks=1", "--output=/dev/null", "--export=NONE"}));
  EXPECT_EQ(job->output_template, "");
}

TEST(MapSubmitTest, GpuLinkIsRefusedAndSaysWhatIsLost) {
  protocol::SubmitRequest request = Request({"./train"});
  request.gpu_cores = 2;
  request.min_gpu_link = "NV";
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(job.error().message().rfind("--gpu-link cannot be mapped to Slurm", 0), 0u);
  EXPECT_NE(job.error().message().find("host bridge"), std::string::npos);
}

TEST(MapSubmitTest, NotifyIsRefusedAndPointsAtMailTypeAndWait) {
  protocol::SubmitRequest request = Request({"./train"});
  request.notify = "touch done";

  auto job = MapSubmit(request, {}, kAlice, true);

  ASSERT_FALSE(job);
  EXPECT_EQ(job.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(job.error().message().rfind("--notify cannot be mapped to Slurm", 0), 0u);
  EXPECT_NE(job.error().message().find("--mail-type"), std::string::npos);
  EXPECT_NE(job.error().message().find("dispatch wait ID && CMD"), std::string::npos);
}

TEST(MapSubmitTest, NumaLocalGpuWithoutGpusAddsNothing) {
  protocol::SubmitRequest request = Request({"true"});
  request.numa_local_gpu = true;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  for (const std::string& arg : job->args) {
    EXPECT_EQ(arg.find("--gres"), std::string::npos) << arg;
    EXPECT_NE(arg, "--mem-bind=local");
  }
}

TEST(MapSubmitTest, TimeIsRoundedUpToMinutesWithANote) {
  protocol::SubmitRequest request = Request({"true"});
  request.max_time_s = 90;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--time=2"));
  ASSERT_EQ(job->notes.size(), 1u);
  EXPECT_EQ(job->notes[0],
            "Slurm counts time limits in whole minutes: --max-time 1m30s becomes 2m");
  request.max_time_s = 1;
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--time=1"));  // never 0: that would mean no limit
}

TEST(MapSubmitTest, MemoryIsMebibytesRoundedUpAndNeverZero) {
  protocol::SubmitRequest request = Request({"true"});
  request.max_mem_gb = 0.5;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--mem=512M"));
  request.max_mem_gb = 2.08;
  job = MapSubmit(request, {}, kAlice, true);
  EXPECT_TRUE(Has(job->args, "--mem=2130M"));  // 2129.92 up
  request.max_mem_gb = 1e-6;
  job = MapSubmit(request, {}, kAlice, true);
  EXPECT_TRUE(Has(job->args, "--mem=1M"));  // --mem=0 would be the whole node
}

// --error is sbatch's --error, named as --output is; without it stderr
// follows stdout, as sbatch does by default.
TEST(MapSubmitTest, ErrorIsSbatchError) {
  protocol::SubmitRequest request = Request({"true"});
  request.output = "/home/alice/bench";
  auto merged = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(merged);
  EXPECT_TRUE(merged->error_template.empty());
  for (const std::string& arg : merged->args)
    EXPECT_FALSE(arg.starts_with("--error")) << arg;
  request.error = "/home/alice/errs/";
  request.error_is_dir = true;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--error=/home/alice/errs/error.%j.log"));
  EXPECT_EQ(OutputPathFor(job->error_template, 9), "/home/alice/errs/error.9.log");
  request.error = "/home/alice/100%.err";
  request.error_is_dir = false;
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--error=/home/alice/100%%.err"));
  request.error = "/home/alice/a\\b";
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_FALSE(job);
  EXPECT_NE(job.error().message().find("--error /home/alice/a\\b cannot be mapped to Slurm"),
            std::string::npos)
      << job.error().message();
}

TEST(MapSubmitTest, OutputPathsAreEscapedForSbatch) {
  protocol::SubmitRequest request = Request({"true"});
  request.output = "/data/100%/";
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--output=/data/100%%/output.%j.log"));
  EXPECT_EQ(OutputPathFor(job->output_template, 5), "/data/100%/output.5.log");

  request.output = "/data/run%j.txt";  // a file: taken literally, as locally
  job = MapSubmit(request, {}, kAlice, false);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--output=/data/run%%j.txt"));
  EXPECT_EQ(OutputPathFor(job->output_template, 5), "/data/run%j.txt");

  request.output = "/data/50%job";
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--output=/data/50%%job/output.%j.log"));
  EXPECT_EQ(OutputPathFor(job->output_template, 5), "/data/50%job/output.5.log");

  request.output = "/data/a\\b";
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_FALSE(job);
  EXPECT_NE(job.error().message().find("backslash"), std::string::npos);
}

TEST(MapSubmitTest, AfterAndAfterAnyBecomeDependencies) {
  protocol::SubmitRequest request = Request({"./next"});
  request.after = {3, 4};
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--dependency=afterok:3:4"));
  EXPECT_TRUE(Has(job->args, "--kill-on-invalid-dep=yes"));

  request.after = {3};
  request.after_any = true;
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_TRUE(Has(job->args, "--dependency=afterany:3"));
  EXPECT_FALSE(Has(job->args, "--kill-on-invalid-dep=yes"));
}

TEST(MapSubmitTest, EnvForwardsEverythingThroughSbatch) {
  protocol::SubmitRequest request = Request({"make"});
  request.forward_env = true;
  request.env = {{"EVERYTHING", "from environ"}};  // forwarded by sbatch, not the script
  auto job = MapSubmit(request, {{"FOO", "bar"}}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->args.back(), "--export=ALL");
  EXPECT_EQ(job->script.find("export PATH="), std::string::npos);
  EXPECT_EQ(job->script.find("EVERYTHING"), std::string::npos);
  EXPECT_NE(job->script.find("export FOO=bar\n"), std::string::npos);
}

TEST(MapSubmitTest, TheScriptStartsAfreshFromSlurmsVariables) {
  protocol::SubmitRequest request = Request({"./bench", "it's", "a b"});
  auto job =
      MapSubmit(request, {{"OMP_NUM_THREADS", "4"}, {"CUDA_VISIBLE_DEVICES", "3"}}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->script,
            "#!/bin/sh\n"
            "# Submitted by dispatch (hpc-batch's Slurm backend): the command runs in\n"
            "# hpc-batch's clean environment plus the variables Slurm sets for the job.\n"
            "PATH=/usr/local/bin:/usr/bin:/bin\n"
            "set --\n"
            "for hpcb_name in $(env | sed -n 's/^\\(SLURM[A-Za-z0-9_]*\\)=.*/\\1/p') \\\n"
            "    CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES TMPDIR ENVIRONMENT "
            "HOSTNAME; do\n"
            "  eval \"[ -z \\\"\\${$hpcb_name+set}\\\" ] || set -- \\\"\\$@\\\" "
            "\\\"$hpcb_name=\\${$hpcb_name}\\\"\"\n"
            "done\n"
            "exec /usr/bin/env -i -- \"$@\" \\\n"
            "  PATH=/usr/local/bin:/usr/bin:/bin \\\n"
            "  LANG=C.UTF-8 \\\n"
            "  SLURM_EXPORT_ENV=ALL \\\n"
            "  OMP_NUM_THREADS=4 \\\n"
            "  HOME=/home/alice \\\n"
            "  USER=alice \\\n"
            "  LOGNAME=alice \\\n"
            "  SHELL=/bin/bash \\\n"
            "  \"HPC_BATCH_JOB_ID=$SLURM_JOB_ID\" \\\n"
            "  CUDA_VISIBLE_DEVICES= \\\n"
            "  /bin/sh -c 'exec \"$0\" \"$@\"' ./bench 'it'\"'\"'s' 'a b'\n");
}

// Runs a generated script the way slurmstepd does (by its #! interpreter),
// in what slurmd hands a batch job after sbatch --export=NONE: Slurm's
// variables over the user's login environment.
Result<ProcessOutcome> RunScript(const std::string& script) {
  ProcessSpec spec;
  spec.program = "/usr/bin/env";
  spec.args = {"-i",
               "SLURM_JOB_ID=4711",
               "SLURMD_NODENAME=node1",
               "SLURM_GET_USER_ENV=1",
               "TMPDIR=/scratch/job4711",
               "CUDA_VISIBLE_DEVICES=0,1",
               "HOME=/wrong/home",
               "PATH=/wrong/bin:/usr/bin:/bin",
               "LEAKY=from-profile",
               "BASH_FUNC_module%%=() {  echo module\n}",
               "/bin/sh",
               "-s"};
  spec.stdin_text = script;
  return RunProcess(spec);
}

TEST(MapSubmitTest, TheJobSeesOnlyTheCleanEnvironmentAndSlurms) {
  protocol::SubmitRequest request = Request({"env"});
  request.gpu_cores = 2;  // CUDA_VISIBLE_DEVICES stays Slurm's
  auto job =
      MapSubmit(request, {{"FOO", "a 'b' $c"}, {"PATH", "/opt/x/bin:/usr/bin:/bin"}}, kAlice, true);
  ASSERT_TRUE(job);
  auto outcome = RunScript(job->script);
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->err;
  std::vector<std::string> lines;
  std::istringstream in(outcome->out);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  // PWD comes from the sh that runs the command (slurmd sets it too).
  EXPECT_EQ(lines,
            (Words{"CUDA_VISIBLE_DEVICES=0,1", "FOO=a 'b' $c", "HOME=/home/alice",
                   "HPC_BATCH_JOB_ID=4711", "LANG=C.UTF-8", "LOGNAME=alice",
                   "PATH=/opt/x/bin:/usr/bin:/bin", std::string("PWD=") + cwd, "SHELL=/bin/bash",
                   "SLURMD_NODENAME=node1", "SLURM_EXPORT_ENV=ALL", "SLURM_GET_USER_ENV=1",
                   "SLURM_JOB_ID=4711", "TMPDIR=/scratch/job4711", "USER=alice"}))
      << outcome->out;
}

TEST(MapSubmitTest, TheCommandGetsItsArgumentsAndExitCode) {
  // A first word holding '=' is still the command, not an assignment.
  char dir_template[] = "/tmp/hpcb-slurm-map-XXXXXX";
  std::string dir = ::mkdtemp(dir_template);
  std::string program = dir + "/run=1";
  {
    std::ofstream file(program);
    file << "#!/bin/sh\nprintf '%s|' \"$0\" \"$@\" \"$HPC_BATCH_JOB_ID\" "
            "\"${CUDA_VISIBLE_DEVICES-unset}\"\nexit 9\n";
  }
  ::chmod(program.c_str(), 0755);
  protocol::SubmitRequest request = Request({program, "it's $HOME; `x` \"q\"\n", "", "-n"});
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  auto outcome = RunScript(job->script);
  std::remove(program.c_str());
  ::rmdir(dir.c_str());
  ASSERT_TRUE(outcome) << outcome.error().message();
  EXPECT_EQ(outcome->exit_code, 9) << outcome->err;
  EXPECT_EQ(outcome->out, program + "|it's $HOME; `x` \"q\"\n||-n|4711||");

  // --env keeps what sbatch forwarded and adds the job's variables.
  request.forward_env = true;
  job = MapSubmit(request, {{"FOO", "bar"}}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->script,
            "#!/bin/sh\n"
            "# Submitted by dispatch (hpc-batch's Slurm backend) with --env.\n"
            "export FOO=bar\n"
            "export HOME=/home/alice\n"
            "export USER=alice\n"
            "export LOGNAME=alice\n"
            "export SHELL=/bin/bash\n"
            "export \"HPC_BATCH_JOB_ID=$SLURM_JOB_ID\"\n"
            "export CUDA_VISIBLE_DEVICES=\n"
            "exec " +
                ShellJoin({program, "it's $HOME; `x` \"q\"\n", "", "-n"}) + "\n");
}

TEST(MapSubmitTest, JobNamesAreOneLineOfText) {
  EXPECT_EQ(JobNameFor({"echo", "a\nb", "c\td"}), "echo 'a?b' 'c?d'");
  EXPECT_EQ(JobNameFor({std::string(3000, 'x')}).size(), 1024u);
}

TEST(MapSubmitTest, ANameIsTheSlurmNameAndTheCommandLineGoesToTheComment) {
  protocol::SubmitRequest request = Request({"./bench.sh", "--iterations", "10"});
  request.name = "bench";
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_EQ(Words(job->args.begin(), job->args.begin() + 4),
            (Words{"--parsable", "--job-name=bench",
                   "--comment=dispatch command: ./bench.sh --iterations 10",
                   "--chdir=/home/alice/bench"}));
}

TEST(MapSubmitTest, AnArrayIsSbatchArrayWithAnOutputPerElement) {
  protocol::SubmitRequest request = Request({"./run.sh"});
  request.array = {1, 2, 3, 7, 9, 11};
  request.array_throttle = 2;
  auto job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_TRUE(Has(job->args, "--array=1-3,7,9,11%2"));
  EXPECT_TRUE(Has(job->args, "--output=/home/alice/bench/output.%A_%a.log"));
  EXPECT_EQ(OutputPathFor(job->output_template, 5), "/home/alice/bench/output.5_INDEX.log");
  EXPECT_NE(job->script.find("\"HPC_BATCH_ARRAY_INDEX=$SLURM_ARRAY_TASK_ID\""), std::string::npos)
      << job->script;
  request.forward_env = true;
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_NE(job->script.find("\"HPC_BATCH_ARRAY_INDEX=$SLURM_ARRAY_TASK_ID\""), std::string::npos)
      << job->script;
  request.array.clear();
  job = MapSubmit(request, {}, kAlice, true);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->script.find("HPC_BATCH_ARRAY_INDEX"), std::string::npos);
  EXPECT_FALSE(std::any_of(job->args.begin(), job->args.end(),
                           [](const std::string& arg) { return arg.rfind("--array", 0) == 0; }));
}

TEST(SlurmTextTest, SbatchIds) {
  EXPECT_EQ(*ParseSbatchId("812\n"), 812u);
  EXPECT_EQ(*ParseSbatchId("812;cluster2\n"), 812u);
  EXPECT_FALSE(ParseSbatchId(""));
  EXPECT_FALSE(ParseSbatchId("Submitted batch job 812\n"));
}

TEST(SlurmTextTest, PasswdEntries) {
  auto alice = ParsePasswdEntry("alice:x:1000:1000:Alice A,,,:/home/alice:/bin/bash\n", 1000);
  ASSERT_TRUE(alice) << alice.error().message();
  EXPECT_EQ(alice->user, "alice");
  EXPECT_EQ(alice->home, "/home/alice");
  EXPECT_EQ(alice->shell, "/bin/bash");
  // An empty shell means /bin/sh to the mapping; only the first line counts.
  auto bob =
      ParsePasswdEntry("bob:x:1001:1001::/srv/bob:\nbob:x:1001:1001::/elsewhere:/bin/zsh\n", 1001);
  ASSERT_TRUE(bob) << bob.error().message();
  EXPECT_EQ(bob->home, "/srv/bob");
  EXPECT_EQ(bob->shell, "");
  // A directory service's gecos with a ':' in it.
  auto carol = ParsePasswdEntry("carol:*:1002:1002:Carol: lab 3:/home/carol:/bin/sh", 1002);
  ASSERT_TRUE(carol) << carol.error().message();
  EXPECT_EQ(carol->home, "/home/carol");
  EXPECT_EQ(carol->shell, "/bin/sh");
  auto other = ParsePasswdEntry("alice:x:1000:1000::/home/alice:/bin/bash", 1001);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("for uid 1000, not 1001"), std::string::npos)
      << other.error().message();
  for (const char* bad : {"", "\n", "alice:x:1000:1000:/home/alice:/bin/bash",
                          ":x:1000:1000::/home/alice:/bin/bash"}) {
    auto parsed = ParsePasswdEntry(bad, 1000);
    EXPECT_FALSE(parsed) << "'" << bad << "' was taken";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument) << bad;
    }
  }
}

TEST(SlurmTextTest, Durations) {
  struct Case {
    const char* text;
    std::optional<std::int64_t> seconds;
  };
  const Case cases[] = {
      {"0:01", 1},
      {"5:00", 300},
      {"1:30:00", 5400},
      {"00:02:00", 120},
      {"1-00:00:00", 86400},
      {"2-03", 2 * 86400 + 3 * 3600},
      {"2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60},
      {"45", 45 * 60},
      {"UNLIMITED", std::nullopt},
      {"Partition_Limit", std::nullopt},
      {"INFINITE", std::nullopt},
  };
  for (const Case& c : cases) {
    auto parsed = ParseSlurmDuration(c.text);
    ASSERT_TRUE(parsed) << c.text;
    EXPECT_EQ(*parsed, c.seconds) << c.text;
  }
  for (const char* bad : {"", "x", "1:2:3:4", "-5", "1h"}) {
    EXPECT_FALSE(ParseSlurmDuration(bad)) << bad;
  }
  EXPECT_EQ(MinutesRoundedUp(60), 1);
  EXPECT_EQ(MinutesRoundedUp(61), 2);
  EXPECT_EQ(MinutesRoundedUp(7200), 120);
}

TEST(SlurmTextTest, Timestamps) {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 4;
  tm.tm_mday = 1;
  tm.tm_hour = 10;
  tm.tm_min = 2;
  tm.tm_sec = 3;
  tm.tm_isdst = -1;
  EXPECT_EQ(ParseSlurmTimestamp("2024-05-01T10:02:03"), static_cast<double>(std::mktime(&tm)));
  EXPECT_FALSE(ParseSlurmTimestamp("N/A"));
  EXPECT_FALSE(ParseSlurmTimestamp("Unknown"));
  EXPECT_FALSE(ParseSlurmTimestamp("2024-05-01 10:02:03"));
}

TEST(SlurmTextTest, StatesAndExitCodes) {
  EXPECT_EQ(MapJobState("PENDING").state, protocol::JobState::kQueued);
  EXPECT_EQ(MapJobState("RUNNING").state, protocol::JobState::kRunning);
  EXPECT_EQ(MapJobState("COMPLETING").state, protocol::JobState::kRunning);
  EXPECT_FALSE(IsTerminalState("COMPLETING"));
  EXPECT_EQ(MapJobState("COMPLETED").state, protocol::JobState::kDone);
  EXPECT_FALSE(MapJobState("FAILED").reason);
  EXPECT_EQ(MapJobState("CANCELLED by 1000").reason, protocol::JobReason::kKilled);
  EXPECT_EQ(MapJobState("CANCELLED+").reason, protocol::JobReason::kKilled);
  EXPECT_EQ(MapJobState("TIMEOUT").reason, protocol::JobReason::kTimeout);
  EXPECT_EQ(MapJobState("OUT_OF_MEMORY").reason, protocol::JobReason::kOom);
  EXPECT_EQ(MapJobState("NODE_FAIL").reason, protocol::JobReason::kError);
  EXPECT_TRUE(IsTerminalState("CANCELLED by 0"));

  EXPECT_EQ(ExitFromWaitStatus("768"), 3);   // exit(3)
  EXPECT_EQ(ExitFromWaitStatus("15"), -15);  // SIGTERM
  EXPECT_EQ(ExitFromWaitStatus("0"), 0);
  EXPECT_FALSE(ExitFromWaitStatus("N/A"));
  EXPECT_EQ(ExitFromPair("3:0"), 3);
  EXPECT_EQ(ExitFromPair("0:9"), -9);
  EXPECT_FALSE(ExitFromPair("3"));
}

TEST(SlurmTextTest, ShellSplitUndoesShellJoin) {
  const std::vector<Words> cases = {
      {"echo", "hello"},
      {"sh", "-c", "echo 'quoted' \"double\" $HOME; exit 3"},
      {"a b", "", "it's", "tab\there", "back\\slash", "ünïcode"},
  };
  for (const Words& argv : cases) {
    auto split = ShellSplit(ShellJoin(argv));
    ASSERT_TRUE(split) << ShellJoin(argv);
    EXPECT_EQ(*split, argv);
  }
  EXPECT_EQ(*ShellSplit("a \"b \\\"c\\\"\" d\\ e"), (Words{"a", "b \"c\"", "d e"}));
  EXPECT_FALSE(ShellSplit("'open"));
  EXPECT_FALSE(ShellSplit("\"open"));
}

TEST(SlurmRenderTest, ListLooksLikeTheLocalOne) {
  SlurmJob running;
  running.row.user = "alice";
  running.row.id = 12;
  running.row.argv = {"./bench.sh", "a b"};
  running.row.state = protocol::JobState::kRunning;
  running.row.start_time = 1000;
  running.row.uptime_s = 65;
  running.row.max_time_s = 7200;
  running.row.max_mem_gb = 100.0 / 1024.0;
  running.row.cpu = 2;
  SlurmJob queued;
  queued.row.user = "alice";
  queued.row.id = 13;
  queued.row.argv = {"sleep", "1"};
  queued.row.state = protocol::JobState::kQueued;
  queued.row.gpus = 1;
  queued.row.exclusive = true;
  queued.pending_reason = "Resources";
  SlurmJob done;
  done.row.user = "alice";
  done.row.id = 14;
  done.row.argv = {"false"};
  done.row.state = protocol::JobState::kDone;
  done.row.reason = protocol::JobReason::kOom;
  done.row.max_mem_gb = 1;
  done.row.max_time_s = 60;
  Rendered text = RenderList({running, queued, done}, true, 1000 + 65);
  std::string start = FormatStartTime(1000, 1065);
  ASSERT_EQ(start.size(), 8u);  // HH:MM:SS, both times being on one day
  EXPECT_EQ(text.out,
            "USER   ID  COMMAND           START     UPTIME              MAX-TIME   MEM   GPU  "
            "EXCLUSIVE  STATE    EXIT\n"
            "alice  12  ./bench.sh 'a b'  " +
                start +
                "  1m5s                2h         0.1G  -    no         running  -\n"
                "alice  13  sleep 1           -         queued (Resources)  unlimited  -     1    "
                "yes        queued   -\n"
                "alice  14  false             -         -                   1m         1G    -    "
                "no         done     oom\n");
  EXPECT_EQ(text.err,
            "job 14: killed for exceeding its 1G memory limit; pass --max-mem to raise it\n");
  EXPECT_EQ(RenderList({}, false, 0).out, "no jobs\n");
}

}  // namespace
}  // namespace hpcb::client::slurm
