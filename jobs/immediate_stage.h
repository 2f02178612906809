// ImmediateStage: a runner that ends at once with a fixed outcome — for stage
// kinds this build cannot run (an eval without libtorch), so the reason lands
// in the state store like any other failure. io thread only.
#pragma once

#include <boost/asio/post.hpp>

#include "jobs/stage_runner.h"

namespace ferry {

class ImmediateStage : public StageRunner {
 public:
  ImmediateStage(StageEnv& env, StageOutcome outcome) : env_(env), outcome_(std::move(outcome)) {}
  void start(std::function<void(StageOutcome)> done) override {
    boost::asio::post(env_.io(), [done = std::move(done), o = outcome_] { done(o); });
  }
  void cancel(bool) override {}

 private:
  StageEnv& env_;
  StageOutcome outcome_;
};

}  // namespace ferry
