#include "cuda_emu.h"
#include "../../common.cuh" // once, globally: the kernel files include it again inside their namespaces
#include "../../normal.cuh" // once, globally: gauss.cu and deep.cu both use its functions
#include "../../gomath.cuh" // once, globally: channel.cu and deep.cu both use its functions
#include <cstdio>
#include <cstdlib>
#include <string>
#include <map>

namespace tokens {
#include "../../tokens.cu"
}
namespace vector_ {
#include "../../vector.cu"
}
namespace channel {
#include "../../channel.cu"
}
namespace gauss {
#include "../../gauss.cu"
}
namespace train {
#include "../../train.cu"
}
namespace deep {
#include "../../deep.cu"
}
namespace precision {
#include "../../precision.cu"
}

// Buffers: files of raw float64; read at start, written back at the end.
struct Buf { std::string path; std::vector<double> v; };
static std::vector<Buf*> bufs;
static double *B(const char *path) {
    Buf *b = new Buf{path, {}};
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    b->v.resize(n / 8 + 1);
    if (n && fread(b->v.data(), 8, n / 8, f) != (size_t)(n / 8)) { perror("read"); exit(2); }
    b->v.resize(n / 8);
    if (b->v.empty()) b->v.resize(1);
    fclose(f);
    bufs.push_back(b);
    return b->v.data();
}
static long long L(const char *s) { return strtoll(s, 0, 10); }
static unsigned long long U(const char *s) { return strtoull(s, 0, 10); }
static double D(const char *s) { return strtod(s, 0); }

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: emu kernel grid args...\n"); return 2; }
    std::string k = argv[1];
    unsigned grid = (unsigned)atoi(argv[2]);
    char **a = argv + 3;
    std::function<void()> f;
    if (k == "token_dots") { double *h = B(a[0]), *y = B(a[1]), *x = B(a[2]); long long n = L(a[3]); int t = atoi(a[4]), d = atoi(a[5]); f = [=] { tokens::token_dots(h, y, x, n, t, d); }; }
    else if (k == "token_mix") { double *z = B(a[0]), *c = B(a[1]), *x = B(a[2]); long long n = L(a[3]); int t = atoi(a[4]), d = atoi(a[5]); f = [=] { tokens::token_mix(z, c, x, n, t, d); }; }
    else if (k == "scal") { double *x = B(a[0]); long long n = L(a[1]); double al = D(a[2]); f = [=] { vector_::scal(x, n, al); }; }
    else if (k == "axpby") { double *y = B(a[0]); double al = D(a[1]); double *x = B(a[2]); double be = D(a[3]); long long n = L(a[4]); f = [=] { vector_::axpby(y, al, x, be, n); }; }
    else if (k == "add_diag") { double *x = B(a[0]); long long n = L(a[1]); int t = atoi(a[2]); double v = D(a[3]); f = [=] { vector_::add_diag(x, n, t, v); }; }
    else if (k == "mul_pattern") { double *x = B(a[0]), *p = B(a[1]); long long n = L(a[2]); int m = atoi(a[3]); f = [=] { vector_::mul_pattern(x, p, n, m); }; }
    else if (k == "scale_columns") { double *o = B(a[0]), *i = B(a[1]), *fv = B(a[2]); int d = atoi(a[3]); f = [=] { vector_::scale_columns(o, i, fv, d); }; }
    else if (k == "dot_partial") { double *p = B(a[0]), *x = B(a[1]), *y = B(a[2]); long long n = L(a[3]); f = [=] { vector_::dot_partial(p, x, y, n); }; }
    else if (k == "sqdist_partial") { double *p = B(a[0]), *x = B(a[1]), *y = B(a[2]); long long n = L(a[3]); f = [=] { vector_::sqdist_partial(p, x, y, n); }; }
    else if (k == "sumdiag_partial") { double *p = B(a[0]), *x = B(a[1]); long long n = L(a[2]); int t = atoi(a[3]); f = [=] { vector_::sumdiag_partial(p, x, n, t); }; }
    else if (k == "softmax_output") { double *y = B(a[0]); double *h = std::string(a[1]) == a[0] ? y : B(a[1]); long long n = L(a[2]); int t = atoi(a[3]); double be = D(a[4]); f = [=] { channel::softmax_output(y, h, n, t, be); }; }
    else if (k == "hardmax_output") { double *y = B(a[0]); double *h = std::string(a[1]) == a[0] ? y : B(a[1]); long long n = L(a[2]); int t = atoi(a[3]); f = [=] { channel::hardmax_output(y, h, n, t); }; }
    else if (k == "softmax_gout") { double *g = B(a[0]), *p = B(a[1]), *y = B(a[2]); double *om = std::string(a[3]) == a[0] ? g : B(a[3]); long long n = L(a[4]); int t = atoi(a[5]); double be = D(a[6]), v = D(a[7]); f = [=] { channel::softmax_gout(g, p, y, om, n, t, be, v); }; }
    else if (k == "hardmax_gout") { double *g = B(a[0]), *p = B(a[1]), *y = B(a[2]); double *om = std::string(a[3]) == a[0] ? g : B(a[3]); long long n = L(a[4]); double v = D(a[5]); int pp = atoi(a[6]); f = [=] { channel::hardmax_gout(g, p, y, om, n, v, pp); }; }
    else if (k == "hardmaxt_gout") { double *g = B(a[0]), *p = B(a[1]), *y = B(a[2]); double *om = std::string(a[3]) == a[0] ? g : B(a[3]); long long n = L(a[4]); int t = atoi(a[5]); double v = D(a[6]); int pts = atoi(a[7]), sh = atoi(a[8]); double tol = D(a[9]); f = [=] { channel::hardmaxt_gout(g, p, y, om, n, t, v, pts, sh, tol); }; }
    else if (k == "gaussian_fill") { double *x = B(a[0]); long long n = L(a[1]); unsigned long long s = U(a[2]), o = U(a[3]); double sc = D(a[4]); f = [=] { gauss::gaussian_fill(x, n, s, o, sc); }; }
    else if (k == "softmax_loss_grad") { double *g = B(a[0]), *p = B(a[1]), *yh = B(a[2]), *y = B(a[3]); long long n = L(a[4]); int t = atoi(a[5]); double be = D(a[6]), sc = D(a[7]); f = [=] { train::softmax_loss_grad(g, p, yh, y, n, t, be, sc); }; }
    else if (k == "adam_step") { double *w = B(a[0]), *g = B(a[1]), *m = B(a[2]), *v = B(a[3]); long long n = L(a[4]); double lr = D(a[5]), b1 = D(a[6]), b2 = D(a[7]), ep = D(a[8]), c1 = D(a[9]), c2 = D(a[10]); f = [=] { train::adam_step(w, g, m, v, n, lr, b1, b2, ep, c1, c2); }; }
    else if (k == "deep_sample") { double *o = B(a[0]), *in = B(a[1]); long long n = L(a[2]); int ly = atoi(a[3]), dr = atoi(a[4]); double c = D(a[5]), be = D(a[6]); unsigned long long s = U(a[7]), of = U(a[8]), st = U(a[9]); f = [=] { deep::deep_sample(o, in, n, ly, dr, c, be, s, of, st); }; }
    else if (k == "deep_sample_warp") { double *o = B(a[0]), *in = B(a[1]); long long n = L(a[2]); int ly = atoi(a[3]), dr = atoi(a[4]); double c = D(a[5]), be = D(a[6]); unsigned long long s = U(a[7]), of = U(a[8]), st = U(a[9]); f = [=] { deep::deep_sample_warp(o, in, n, ly, dr, c, be, s, of, st); }; }
    else if (k == "to_f32") { float *o = (float *)B(a[0]); double *in = B(a[1]); long long n = L(a[2]); int tf = atoi(a[3]); f = [=] { precision::to_f32(o, in, n, tf); }; }
    else if (k == "split_bf16") { unsigned short *o = (unsigned short *)B(a[0]); double *in = B(a[1]); long long n = L(a[2]), st = L(a[3]); f = [=] { precision::split_bf16(o, in, n, st); }; }
    else if (k == "from_f32") { double *c = B(a[0]); float *p = (float *)B(a[1]); long long n = L(a[2]); double al = D(a[3]), be = D(a[4]); f = [=] { precision::from_f32(c, p, n, al, be); }; }
    else { fprintf(stderr, "unknown kernel %s\n", k.c_str()); return 2; }
    launch(grid, 256, f);
    for (Buf *b : bufs) {
        FILE *fo = fopen(b->path.c_str(), "wb");
        fwrite(b->v.data(), 8, b->v.size(), fo);
        fclose(fo);
    }
    return 0;
}
