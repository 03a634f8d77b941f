/**
 * The integration sandbox on a real project: Python with the project installed into a .venv by the set-up. Three heads checked in the one sandbox brought to each
 * in place: green, red for real, green (tests/support/integration-sandbox-heads.ts).
 */
import { PYTHON, describeHeadsInOneSandbox } from '../support/integration-sandbox-heads.js';

describeHeadsInOneSandbox(PYTHON);
