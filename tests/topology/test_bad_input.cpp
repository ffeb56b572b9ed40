// Every bad input of the issue through load_topology(): one clear message naming the file,
// the field and the problem (the CLI prints it as one line and exits 2).
#include <cctype>

#include "colltune/topology/json_io.hpp"
#include "colltune/topology/nccl_xml.hpp"
#include "topo_test_util.hpp"

namespace colltune::topo {
namespace {

using test::data_path;
using test::error_of;
using ::testing::HasSubstr;

struct BadFile {
  const char* file;
  const char* expected;  // after "PATH: "
};

class BadTopologyFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadTopologyFile, FailsWithFileFieldAndProblem) {
  const BadFile& bad = GetParam();
  const std::string path = data_path(bad.file);
  const std::string message = error_of([&] { load_topology(path); });
  EXPECT_THAT(message, HasSubstr(path + ": " + bad.expected));
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadTopologyFile,
    ::testing::Values(
        BadFile{"bad-malformed.json", "line 9, column 3: syntax error"},
        BadFile{"bad-truncated.json", "line 91, column 5: syntax error"},
        BadFile{"bad-zero-bandwidth.json", "links[4].bandwidth_gbps: must be > 0, got 0"},
        BadFile{"bad-negative-bandwidth.json", "links[6].bandwidth_gbps: must be > 0, got -12.5"},
        BadFile{"bad-missing-device.json", "links[7].to: no device \"h2/nic0\" in \"devices\""},
        BadFile{"bad-self-link.json", "links[3].to: same device as \"from\" (\"h0/gpu1\"): a link joins two devices"},
        BadFile{"bad-rank-twice.json", "ranks[3].rank: rank 1 mapped twice (also ranks[1])"},
        BadFile{"bad-rank-missing.json", "ranks: rank 3 is not mapped (4 entries, so ranks must be 0..3)"},
        BadFile{"bad-disconnected.json",
                "graph: disconnected: rank 2 (device 'h1/gpu0') cannot be reached from rank 0 (device 'h0/gpu0')"},
        BadFile{"bad-one-way.json", "graph: disconnected: rank 2 (device 'h1/gpu0') cannot reach rank 0"},
        BadFile{"bad-unknown-kind.json", "links[8].kind: unknown link kind 'infiniband' (valid: nvlink, pcie, net, shm, sys)"},
        BadFile{"bad-version.json", "version: unsupported version 3 (this colltune reads versions 1 to 2)"},
        BadFile{"bad-duplicate-device.json", "devices[4].id: duplicate device id \"h1/gpu0\""},
        BadFile{"bad-xml-not-nccl.xml", "system: no <system> element: not an NCCL topology file"},
        BadFile{"bad-utf16.xml", "not UTF-8 text (a UTF-16 byte-order mark): save it as UTF-8"}),
    [](const ::testing::TestParamInfo<BadFile>& p) {
      std::string name = p.param.file;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(BadTopologyXml, ParseErrorsCarryTheLine) {
  EXPECT_THAT(error_of([] { load_topology(data_path("bad-malformed.xml")); }),
              ::testing::MatchesRegex(".*bad-malformed.xml:64: XML parse error: .*"));
  EXPECT_THAT(error_of([] { load_topology(data_path("bad-truncated.xml")); }),
              ::testing::MatchesRegex(".*bad-truncated.xml:[0-9]+: XML parse error: .*"));
}

TEST(BadTopologySpec, UnknownPresetParameterAndMissingFile) {
  EXPECT_THAT(error_of([] { load_topology("dgx-h900:nodes=2"); }),
              HasSubstr("unknown topology preset 'dgx-h900' (valid: dgx-h100"));
  EXPECT_THAT(error_of([] { load_topology("fat-tree:racks=4"); }),
              HasSubstr("preset fat-tree: unknown parameter 'racks' (valid: nodes, gpus, nics, per_switch, nic_gbit, "
                        "oversub, leaf_ports, sharp, nvlink, nvls, gpu, cpu, transport)"));
  EXPECT_THAT(error_of([] { load_topology("flat:bw=-1"); }), HasSubstr("preset flat: bw: '-1' must be > 0"));
  EXPECT_THAT(error_of([] { load_topology("fat-tree:cpu=zen4"); }),
              HasSubstr("preset fat-tree: cpu: 'zen4' must be one of xeon-8480c, epyc-7742, xeon-e5-2698v4"));
  EXPECT_THAT(error_of([] { load_topology("/no/such/machine.json"); }), HasSubstr("/no/such/machine.json: cannot read"));
  EXPECT_THAT(error_of([] { load_topology(""); }), HasSubstr("empty topology spec"));
  EXPECT_THAT(error_of([] { load_topology(COLLTUNE_TEST_DATA); }), HasSubstr("unknown topology preset"));
  // Too long to be a file name (ENAMETOOLONG): an unknown preset, not a std::filesystem_error.
  EXPECT_THAT(error_of([] { load_topology(std::string(5000, 'a') + ".topo"); }), HasSubstr("unknown topology preset"));
}

TEST(BadTopologyJson, FieldErrors) {
  auto err = [](const std::string& text) { return error_of([&] { topology_from_json(text, "t.json"); }); };
  const std::string head = R"({"format":"colltune-topology","version":1,"hosts":["h"],)";
  EXPECT_THAT(err("[]"), HasSubstr("t.json: (top level): expected an object"));
  EXPECT_THAT(err(R"({"format": 1e400})"), HasSubstr("t.json: line 1, column 16: number 1e400 is out of range"));
  EXPECT_THAT(err(R"({"format":"nccl","version":1})"), HasSubstr("t.json: format: expected \"colltune-topology\""));
  EXPECT_THAT(err(R"({"format":"colltune-topology"})"), HasSubstr("t.json: version: missing"));
  EXPECT_THAT(err(head + R"("devices":[],"links":[],"ranks":[]})"), HasSubstr("t.json: ranks: no ranks listed"));
  EXPECT_THAT(err(head + R"("devices":{},"links":[],"ranks":[]})"), HasSubstr("t.json: devices: expected an array"));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu","host":"x"}],"links":[],"ranks":[]})"),
              HasSubstr("devices[0].host: no such host \"x\""));
  EXPECT_THAT(err(head + R"("devices":[{"id":"","kind":"gpu"}],"links":[],"ranks":[]})"),
              HasSubstr("devices[0].id: expected a non-empty string, got \"\""));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu","reduce_gbps":-1}],"links":[],"ranks":[]})"),
              HasSubstr("devices[0].reduce_gbps: must be >= 0, got -1"));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu"}],"links":[{"from":"g","to":"g","kind":"net","bandwidth_gbps":"fast","latency_us":1}],"ranks":[]})"),
              HasSubstr("links[0].bandwidth_gbps: expected a number, got \"fast\""));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu"}],"links":[{"from":"g","to":"g","kind":"net","bandwidth_gbps":1,"latency_us":-2}],"ranks":[]})"),
              HasSubstr("links[0].latency_us: must be >= 0, got -2"));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu"}],"links":[],"ranks":[{"rank":0.5,"device":"g"}]})"),
              HasSubstr("ranks[0].rank: expected a non-negative integer, got 0.5"));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu"}],"links":[],"ranks":[{"rank":0,"device":"q"}]})"),
              HasSubstr("ranks[0].device: no device \"q\""));
  EXPECT_THAT(err(head + R"("devices":[{"id":"g","kind":"gpu"}],"links":[],"ranks":[{"rank":1000000000,"device":"g"}]})"),
              HasSubstr("ranks: rank 0 is not mapped (1 entries, so ranks must be 0..0)"));
  EXPECT_THAT(err(std::string(100000, '[') + std::string(100000, ']')),
              HasSubstr("t.json: line 1, column 65: nesting deeper than 64 levels"));
  EXPECT_THAT(err(head + R"("devices":[],"links":[],"ranks":[]} trailing)"),
              HasSubstr("unexpected text after the end of the JSON document"));
}

// The link figures topo validate accepts are the ones every engine can time (once a latency of
// 1e308 validated and simulate then failed with a misleading message).
TEST(BadTopologyJson, LinkFiguresWithinTheLimits) {
  auto with_link = [](const std::string& bw, const std::string& lat) {
    return R"({"format":"colltune-topology","version":1,"hosts":["h"],"devices":[{"id":"a","kind":"gpu","host":"h"},)"
           R"({"id":"b","kind":"gpu","host":"h"}],"links":[{"from":"a","to":"b","kind":"nvlink","bandwidth_gbps":)" +
           bw + R"(,"latency_us":)" + lat + R"(,"duplex":true}],"ranks":[{"rank":0,"device":"a"},{"rank":1,"device":"b"}]})";
  };
  auto validate = [](const std::string& text) {
    return error_of([&] { topology_from_json(text, "t.json").validate(); });
  };
  EXPECT_NO_THROW(topology_from_json(with_link("100", "1"), "t.json").validate());
  EXPECT_THAT(validate(with_link("100", "1e308")), HasSubstr(".latency_us: must be in [0, 1e+06] us"));
  EXPECT_THAT(validate(with_link("1e300", "1")), HasSubstr(".bandwidth_gbps: must be in [1e-06, 1e+06] GB/s"));
  EXPECT_THAT(validate(with_link("1e-300", "1")), HasSubstr(".bandwidth_gbps: must be in"));
}

// Size limits hold in the graph itself and are checked by the presets before they build.
TEST(BadTopologySpec, SizeLimitsAreStatedAndQuick) {
  EXPECT_THAT(error_of([] { load_topology("fat-tree:nodes=65536,gpus=1024"); }),
              HasSubstr("= 67108864 ranks: above the limit of 131072 ranks"));
  EXPECT_THAT(error_of([] { load_topology("torus:dims=4096x4096"); }),
              HasSubstr("preset torus: dims make 16777216 GPUs: above the limit of 131072 ranks"));
  EXPECT_THAT(error_of([] { load_topology("flat:ranks=1000000"); }), HasSubstr("ranks: '1000000' must be an integer in 1..131072"));
  Topology t;
  EXPECT_THAT(error_of([&] { t.map_rank(1 << 20, 0); }), HasSubstr("topology: rank 1048576: above the limit of 131072 ranks"));
}

TEST(BadTopologyXml, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep = "<system version=\"1\">\n" + [] {
    std::string s;
    for (int i = 0; i < 20000; ++i) s += "<pci busid=\"x\">";
    for (int i = 0; i < 20000; ++i) s += "</pci>";
    return s;
  }() + "</system>";
  EXPECT_THAT(error_of([&] { topology_from_nccl_xml(deep, "d.xml"); }),
              HasSubstr("d.xml:2: elements nested deeper than 64 levels"));
  // Comments, CDATA and quoted '>' do not nest; 64 levels are fine.
  std::string ok = "<system><!-- <a><b><c> --><![CDATA[<x><y>]]>";
  for (int i = 0; i < 62; ++i) ok += "<pci busid=\"a>b\">";
  for (int i = 0; i < 62; ++i) ok += "</pci>";
  ok += "</system>";
  EXPECT_THAT(error_of([&] { topology_from_nccl_xml(ok, "ok.xml"); }), ::testing::Not(HasSubstr("nested deeper")));
}

}  // namespace
}  // namespace colltune::topo
