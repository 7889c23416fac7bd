// train.cu: the operations of gradient descent on the AIM student (device.Trainer); the CPU
// twins are in cpu/train.go (SoftmaxLossGrad, AdamStep). Each computes with the same operations
// in the same order as its twin, so with --fmad=false adam_step gives the same bits and
// softmax_loss_grad the same gamma (its loss partials differ from the twin's sequential sum
// only by the order of the block reduction).

#include "common.cuh"

// softmaxLossGrad is cpu.SoftmaxLossGrad for one sample: for each row a, with
// G_c = 2 scale (yhat_ac - y_ac), writes gamma_ab = beta yhat_ab (G_b - sum_c G_c yhat_ac),
// then replaces gamma by its symmetric part, (gamma_ab + gamma_ba) / 2, and returns
// sum_ab (yhat_ab - y_ab)^2 (unscaled, as the twin's running sum).
static __device__ double softmaxLossGrad(double *gamma, const double *yhat, const double *y, int t,
                                         double beta, double scale) {
    double loss = 0;
    for (int a = 0; a < t; a++) {
        const i64 row = (i64)a * t;
        double dot = 0;
        for (int c = 0; c < t; c++) {
            const double diff = yhat[row + c] - y[row + c];
            loss += diff * diff;
            const double G = 2 * scale * diff;
            dot += G * yhat[row + c];
        }
        for (int b = 0; b < t; b++) {
            const double G = 2 * scale * (yhat[row + b] - y[row + b]);
            gamma[row + b] = beta * yhat[row + b] * (G - dot);
        }
    }
    for (int a = 1; a < t; a++) {
        for (int b = 0; b < a; b++) {
            const double s = (gamma[(i64)a * t + b] + gamma[(i64)b * t + a]) * 0.5;
            gamma[(i64)a * t + b] = s;
            gamma[(i64)b * t + a] = s;
        }
    }
    return loss;
}

// softmax_loss_grad: one thread per sample mu = blockIdx.x * BLOCK + threadIdx.x (grid =
// GridThreads(n)); writes gamma for the sample and part[blockIdx.x] = scale * the sum of the
// block's per-sample losses.
extern "C" __global__ void softmax_loss_grad(double *gamma, double *part, const double *yhat, const double *y,
                                             long long n, int t, double beta, double scale) {
    __shared__ double sh[BLOCK / 32];
    const i64 mu = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0;
    if (mu < n) {
        const i64 tt = (i64)t * t;
        s = softmaxLossGrad(gamma + mu * tt, yhat + mu * tt, y + mu * tt, t, beta, scale);
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = scale * s;
    }
}

// adam_step: grid-stride over len elements (grid = GridElems(len)); c1 = 1 - b1^t and
// c2 = 1 - b2^t come from the host (math.Pow), as in the twin:
// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g g; w -= lr (m / c1) / (sqrt(v / c2) + eps).
extern "C" __global__ void adam_step(double *w, const double *g, double *m, double *v, long long len, double lr,
                                     double b1, double b2, double eps, double c1, double c2) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < len; i += (i64)gridDim.x * blockDim.x) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        w[i] -= lr * (m[i] / c1) / (sqrt(v[i] / c2) + eps);
    }
}
