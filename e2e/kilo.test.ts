/** Kilo Code's CLI (`kilo`, a fork of opencode) against `selfgc proxy` and a scripted upstream, in a network namespace of its own. */
import { describeAgentScenarios } from './describe-agent-scenarios.js';

describeAgentScenarios('kilo');
