// Session: what the app holds, saved to and restored from a small JSON file — the input references, the
// hardware fields edited by hand, the strategy as ds_config text, the run settings, the schedule, the sweep axes,
// the Compare tab's trace and the open tab. Restoring re-reads everything through core (errors name the file).
//   Session s = capture(scenario);  s.tab = "sweep";  write_session(s, "run.zsession");
//   Result<Session> r = read_session("run.zsession");  Result<Scenario> sc = restore(*r);
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "gui/models/scenario.h"
#include "gui/models/sweep.h"

namespace zs::gui {

struct Session {
  InputRefs refs;
  std::map<std::string, std::string> hardware_edits;  // HardwareModel field key → value text
  std::string ds_config_text;                         // the strategy as it was (ds_config_text())
  RunOverrides run;                                   // always explicit in a saved session
  core::Schedule schedule = core::Schedule::deepspeed;
  std::string tab = "explore";                        // explore | simulate | compare | sweep
  SweepSpec sweep;
  std::string trace_path;                             // Compare tab's measured trace ("" none)
};

// The session of a scenario: hardware edits are the fields that differ from the profile file it came from.
Session capture(const Scenario& s);
core::Result<Scenario> restore(const Session& s);

std::string session_to_json(const Session& s);
core::Result<Session> session_from_json(const std::string& text, const std::string& source);
core::Status write_session(const Session& s, const std::string& path);
core::Result<Session> read_session(const std::string& path);

}  // namespace zs::gui
